package transport

import (
	"sync/atomic"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// dropReason says why a message was not sent or not delivered.
type dropReason uint8

const (
	dropNone             dropReason = iota
	dropQueueFull                   // the peer's queue held QueueLen messages
	dropQueueBytes                  // the peer's queue held QueueBytes bytes
	dropTooLarge                    // the encoding exceeded MaxFrameSize
	dropUnknownPeer                 // no address for the destination
	dropFault                       // a Faults drop rule
	dropBlocked                     // a Faults block rule or isolation
	dropUnsent                      // queued, then lost with a broken connection or a removed peer
	dropClosed                      // sent after Close
	dropInboxFull                   // a message to self found the inbox full
	dropInvalid                     // a message type Decode would reject
	dropSnapshotBusy                // a snapshot while another was being written to the peer
	dropSnapshotReplaced            // a snapshot not started, replaced by a newer one
	numDropReasons
)

// DropStats counts dropped messages by reason.
type DropStats struct {
	QueueFull   uint64 // the destination's queue was full (QueueLen)
	QueueBytes  uint64 // the destination's queue was over its byte budget (QueueBytes)
	TooLarge    uint64 // the encoded message exceeded MaxFrameSize (MaxMessageSize for snapshots)
	UnknownPeer uint64 // the destination had no address
	Fault       uint64 // dropped by a Faults drop rule, either direction
	Blocked     uint64 // dropped by a Faults block rule or isolation, either direction
	Unsent      uint64 // queued but lost with a broken connection or a removed peer
	Closed      uint64 // sent after Close
	InboxFull   uint64 // a message to this server itself found the inbox full
	Invalid     uint64 // a message of no known type, which the receiver would refuse
	// SnapshotBusy counts messages carrying a snapshot dropped because
	// another was being written to the same peer; SnapshotReplaced those
	// dropped before their first chunk for a newer one.
	SnapshotBusy     uint64
	SnapshotReplaced uint64
}

// Total returns the sum of every reason.
func (d DropStats) Total() uint64 {
	return d.QueueFull + d.QueueBytes + d.TooLarge + d.UnknownPeer + d.Fault + d.Blocked +
		d.Unsent + d.Closed + d.InboxFull + d.Invalid + d.SnapshotBusy + d.SnapshotReplaced
}

// PeerStats describes the outgoing link to one peer.
type PeerStats struct {
	Addr        string
	Connected   bool   // the outgoing connection is established
	Queued      int    // messages waiting to be written
	QueuedBytes int    // bytes waiting to be written
	Sent        uint64 // messages written
	Dropped     uint64 // messages to this peer dropped at Send or lost unsent
	Connects    uint64 // successful handshakes
}

// Stats is a snapshot of a Transport's counters; every counter only grows
// during the transport's life.
type Stats struct {
	Sent          uint64 // messages written to peers
	SentBytes     uint64 // bytes written to peers, framing included
	Flushes       uint64 // buffered writes pushed to sockets (one per batch)
	Received      uint64 // messages decoded from peers, before inbound faults
	ReceivedBytes uint64 // bytes of those messages, framing included
	Delivered     uint64 // messages handed to the Recv channel
	Dropped       DropStats

	Dials        uint64 // outgoing connection attempts
	DialFailures uint64 // attempts that failed (connect, handshake or rejection)
	Connects     uint64 // outgoing connections established
	Reconnects   uint64 // connections established to a peer that had been connected before
	Accepted     uint64 // incoming connections that passed the handshake
	Rejected     uint64 // incoming handshakes this server refused
	ConnErrors   uint64 // incoming connections closed on a protocol error (bad frame, bad message)

	Peers map[gpaxos.ID]PeerStats
}

// counters are the live counters behind Stats.
type counters struct {
	sent, sentBytes, flushes           atomic.Uint64
	received, receivedBytes, delivered atomic.Uint64
	dropped                            [numDropReasons]atomic.Uint64
	dials, dialFailures                atomic.Uint64
	connects, reconnects               atomic.Uint64
	accepted, rejected, connErrors     atomic.Uint64
}

func (c *counters) drop(r dropReason, n uint64) { c.dropped[r].Add(n) }

func (c *counters) snapshot() Stats {
	d := func(r dropReason) uint64 { return c.dropped[r].Load() }
	return Stats{
		Sent:          c.sent.Load(),
		SentBytes:     c.sentBytes.Load(),
		Flushes:       c.flushes.Load(),
		Received:      c.received.Load(),
		ReceivedBytes: c.receivedBytes.Load(),
		Delivered:     c.delivered.Load(),
		Dropped: DropStats{
			QueueFull:        d(dropQueueFull),
			QueueBytes:       d(dropQueueBytes),
			TooLarge:         d(dropTooLarge),
			UnknownPeer:      d(dropUnknownPeer),
			Fault:            d(dropFault),
			Blocked:          d(dropBlocked),
			Unsent:           d(dropUnsent),
			Closed:           d(dropClosed),
			InboxFull:        d(dropInboxFull),
			Invalid:          d(dropInvalid),
			SnapshotBusy:     d(dropSnapshotBusy),
			SnapshotReplaced: d(dropSnapshotReplaced),
		},
		Dials:        c.dials.Load(),
		DialFailures: c.dialFailures.Load(),
		Connects:     c.connects.Load(),
		Reconnects:   c.reconnects.Load(),
		Accepted:     c.accepted.Load(),
		Rejected:     c.rejected.Load(),
		ConnErrors:   c.connErrors.Load(),
	}
}
