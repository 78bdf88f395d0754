// Package peer is the TCP transport between the members of an ensemble: it
// carries Group Paxos messages (gpaxos.Message) from the one goroutine that
// drives a server's node to the others.
//
// Each server dials every peer it sends to and keeps one connection per
// peer for its outgoing messages; incoming connections are accepted on the
// peer port and identified by a handshake (cluster name and sender id).
// Sending never blocks the caller: every peer has a bounded queue drained
// by its own writer goroutine, which writes everything queued in one
// buffered write (many messages, one syscall). When a queue is full, or
// the peer is unreachable, messages are dropped and counted — Group Paxos
// tolerates loss by retransmitting on its own timers, while a consensus
// goroutine blocked on one slow peer would stall the whole server. A peer
// that is down is redialed with exponential backoff and jitter, without
// slowing sends to the others.
//
// Faults (loss, delay, one-way blocks, isolation) can be injected at run
// time for tests, since the kernel here has no netem; see Faults.
package peer
