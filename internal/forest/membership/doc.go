// Package membership runs Giraffe's membership views and failure detection
// (seed 000 §III-A) as a pure state machine per server, Node, driven by
// messages (Step) and ticks (Tick) and producing messages (Outbox). It is
// what a later issue wires to real servers; tests drive hundreds of Nodes in
// a deterministic in-memory harness with virtual time.
//
// The protocol, as the paper describes it and with the gaps filled:
//
//   - Views are versioned (ViewID: epoch, version). A view is the forest of
//     its members (package forest), so every server derives the same trees,
//     groups and coordinators from it.
//   - The Rooter (initially the first server, Bootstrap) admits servers,
//     hands out colors (the forest gives a joiner the smallest group's
//     color), removes servers reported failed, bumps the version on each
//     change and disseminates the change down all trees (MsgUpdate, one
//     tagged copy per tree, forwarded only in the tree of its color,
//     deduplicated by forest.Receiver). A server applies a change that
//     follows its view directly and asks for the full view on any gap.
//   - A joiner fetches the view from any member, then asks the Rooter with
//     the version it holds; the Rooter replies with the change (one version
//     behind) or the full view (see join.go).
//   - Parents and children heartbeat each other in every tree; an expired
//     lease is reported to the Rooter, which removes the server
//     (detector.go). Heartbeats carry view ids, which is how a server that
//     missed an update, or was removed while alive, finds out.
//   - If the Rooter's lease expires, the roots take over: the one with the
//     newest view becomes the Rooter in a new epoch (election.go).
//
// What this package does not do: agree on anything under partitions. The
// membership view decides the dissemination topology and the groups, which
// matter for speed and liveness; in the replicated ensemble the Rooter is
// the global leader and membership changes are committed entries, which is
// where safety comes from (DESIGN.md §3).
package membership
