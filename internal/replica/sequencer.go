package replica

import "github.com/giraffe-coord/giraffe/internal/gpaxos"

// sequencer is the leader's admission check: of each origin it takes the
// proposals of the newest stream it has seen, in sequence, without gaps.
// A proposal after a lost one is refused, so the origin's stream stalls
// and the origin starts a new one, instead of the log holding a client's
// later request without its earlier one.
type sequencer struct {
	epoch gpaxos.Epoch // the leader epoch the table belongs to
	next  map[originInc]streamPos
}

// originInc is one incarnation of an origin. Each counts its streams
// afresh, and a late copy of a proposal from an earlier incarnation (a
// duplicated message, from before the server lost its disk) must still
// meet that incarnation's position, or it would be appended again.
type originInc struct {
	origin gpaxos.ID
	inc    uint64
}

type streamPos struct {
	stream, next uint64
}

// reset empties the table for a new leader epoch: streams forwarded to an
// earlier leader are the origins' business, not this epoch's.
func (s *sequencer) reset(e gpaxos.Epoch) {
	s.epoch = e
	s.next = map[originInc]streamPos{}
}

// admit reports whether a proposal with header h may be appended now.
func (s *sequencer) admit(h proposalHeader) bool {
	k := originInc{h.Origin, h.Inc}
	cur, ok := s.next[k]
	switch {
	case ok && h.Stream == cur.stream && h.Seq == cur.next:
	case (!ok || h.Stream > cur.stream) && h.Seq == 1:
		cur.stream = h.Stream
	default:
		return false
	}
	cur.next = h.Seq + 1
	s.next[k] = cur
	return true
}
