// Package sessions holds the rules that keep a ZooKeeper session's
// guarantee in an ensemble, free of connections and wall clocks so that
// the server and the simulator run the same code:
//
//   - Tracker: when each session expires. Only the leader acts on it, and
//     expiry is a committed closeSession entry, never a local decision.
//   - Expiry: when the leader may act on its tracker (it has led for a
//     period, and has applied what it knew committed a period earlier).
//   - Guard: whether a member may serve its clients, from the proof that
//     its own touches reach a quorum, so that a client whose session the
//     ensemble may expire is disconnected first.
//   - Owners: the replicated table of the server each session's requests
//     may come from, which a reconnect moves through the log
//     (SESSIONMOVED).
//
// docs/ensemble.md ("Serving only with a quorum") has the argument that
// together they never let a client stay connected to a server while the
// ensemble expires its session.
package sessions
