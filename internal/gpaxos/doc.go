// Package gpaxos is Group Paxos (the Giraffe paper, §III-B) as a pure,
// deterministic state machine: messages and ticks go in through Step and
// Tick; messages to send, state to persist and committed entries come out
// through Ready. The package does no I/O, reads no clock, starts no goroutine
// and draws randomness only from the source its Config provides, so one
// process can run hundreds of nodes under the simulator in sim/ and replay
// any run exactly.
//
// Roles. Every voting server is an acceptor of exactly one group and a
// learner. The coordinator (GC) of a group relays the global leader's
// proposals down its group's tree and reports to the global leader (GL) the
// highest zxid a majority of its group has durably accepted. The GL orders
// entries and declares an entry committed once the groups reporting it weigh
// more than half of all voters (package internal/quorum). Classic mode is the
// same code with one group and a star tree, which is a leader-centric protocol
// like Zab.
//
// Safety rests on acceptors alone: an acceptor promises global epochs
// (strictly increasing), follows exactly one history per epoch, accepts in
// zxid order without gaps and acknowledges only what is on stable storage.
// Coordinators aggregate, they never vote on anyone's behalf, so a stale
// coordinator can delay progress but never make a wrong claim. Group epochs
// fence stale coordinators so that members and the GL follow one of them.
// docs/protocol.md gives the full protocol and the safety argument.
package gpaxos
