// Package transport carries Group Paxos messages (gpaxos.Message) between
// Giraffe servers over TCP.
//
// Shape. Every server listens on one address. For every peer in its address
// book it keeps one outgoing connection, written by one goroutine that drains
// a bounded per-peer queue; connections a server accepts are only read. So a
// pair of servers talks over two connections, one per direction, and a slow
// or dead peer only ever stalls its own writer. Received messages go through
// one inbox to a single channel (Recv) read by the goroutine that drives the
// gpaxos.Node, which keeps the node single-threaded as gpaxos requires.
//
// Loss instead of blocking. Send never blocks: when a peer's queue is full
// (in messages or bytes) the message is dropped and counted. Group Paxos
// tolerates loss by design (heartbeats, catch-up requests and retransmission
// on timeout), whereas a Send that blocks would let one unreachable peer
// freeze the consensus goroutine and with it every other peer, commits and
// client replies.
//
// Wire format. Every frame is a 4-byte big-endian length followed by that
// many bytes. A connection starts with a hello frame from the dialer (magic,
// version, cluster name, sender and expected receiver IDs, and, when
// namespaces are declared, the hash and description of their table)
// answered by an accept-or-reject frame; after that the dialer sends one message per frame,
// encoded by Encode (a version byte then the fields, varint-coded). Frames
// longer than Config.MaxFrameSize, undecodable messages and messages whose
// From is not the peer that completed the handshake close the connection
// with a log line saying why.
//
// Snapshots. A message that carries a snapshot goes in chunk frames of up
// to a mebibyte, on a lane of its own beside the queue: a first chunk (a
// marker byte no version byte takes, the message's size, its first bytes)
// and next chunks (another marker, more bytes), with whole messages
// written between them, so that heartbeats and appends to a server that
// is catching up are not held behind gigabytes. The sender writes the
// snapshot's data from where it lies, the receiver reassembles the
// message into one buffer bounded by Config.MaxMessageSize, and one
// snapshot at a time goes to each peer (a newer one replaces one not
// started; while one is being written, others are dropped). A connection
// that breaks drops the part that went out; the peer asks again.
//
// TLS. A Transport configured with TLS runs a TLS handshake on every
// connection before the hello: the acceptor requires and verifies the
// dialer's certificate, the dialer verifies the acceptor's, each against
// its own trust store, so only members holding a certificate of a trusted
// authority exchange messages. A failed handshake ends the connection with
// a log line on the side that saw it fail (usually both).
//
// Faults. A Transport configured with FaultInjection has a Faults object
// that tests (and, through ParseFaultSpec, an admin endpoint) use to drop,
// delay and block traffic on chosen directed links, isolate the server, or
// pause it: the kernel of the test machines has no netem, so fault
// injection lives here. Without FaultInjection there is no such object and
// the hooks on the message paths pass everything through.
package transport
