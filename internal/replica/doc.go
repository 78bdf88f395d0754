// Package replica hosts one server's Group Paxos node (internal/gpaxos):
// it persists what the node asks to (hard state, log entries, snapshots) and
// fsyncs before any message that speaks for that state leaves, drives the
// node's clock with a real ticker, moves messages through a Transport, and
// hands committed entries, in zxid order, to the application. A storage
// goroutine does the writing, so the node goes on stepping messages and
// committing during an fsync (gpaxos.Node.Ready's overlapped Readies).
//
// It also gives proposals an exactly-once, in-order path from the server
// that accepted a client's request to the log. Group Paxos forwards a
// proposal to the global leader as a message that can be lost (a full
// queue, a reconnect, a leader change); losing one proposal of a client and
// committing the next would break ZooKeeper's FIFO client order. So each
// proposal carries (origin, stream, seq), the leader admits a stream's
// proposals only in sequence, and an origin that sees its stream stall (a
// new leader, or no commit within a timeout) abandons it and starts a new
// one, telling the application so that it fails the requests of the old
// stream the way ZooKeeper does on a leader change: the client sees a lost
// connection and the outcome of those requests is unknown.
//
// At the leader it lets the application see each entry as it is ordered
// (OnLeaderAppend) and answer a proposal's origin before the entry is
// durable or committed (SendEarly, early.go); an origin never orders again
// a proposal answered so.
//
// The package reads the wall clock only for the ticker and proposal
// timeouts; everything that decides safety is in gpaxos.
package replica
