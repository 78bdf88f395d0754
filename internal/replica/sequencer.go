package replica

import "github.com/giraffe-coord/giraffe/internal/gpaxos"

// sequencer is the leader's admission check: of each origin it takes the
// proposals of the newest stream it has seen, in sequence, without gaps.
// A proposal after a lost one is refused, so the origin's stream stalls
// and the origin starts a new one, instead of the log holding a client's
// later request without its earlier one.
type sequencer struct {
	epoch gpaxos.Epoch // the leader epoch the table belongs to
	next  map[gpaxos.ID]streamPos
}

type streamPos struct {
	inc, stream, next uint64
}

// reset empties the table for a new leader epoch: streams forwarded to an
// earlier leader are the origins' business, not this epoch's.
func (s *sequencer) reset(e gpaxos.Epoch) {
	s.epoch = e
	s.next = map[gpaxos.ID]streamPos{}
}

// admit reports whether a proposal with header h may be appended now.
// Another incarnation of the origin (a server that came back with a new
// disk) counts its streams afresh.
func (s *sequencer) admit(h proposalHeader) bool {
	cur, ok := s.next[h.Origin]
	if ok && cur.inc != h.Inc {
		ok = false
	}
	switch {
	case ok && h.Stream == cur.stream && h.Seq == cur.next:
	case (!ok || h.Stream > cur.stream) && h.Seq == 1:
		cur.inc, cur.stream = h.Inc, h.Stream
	default:
		return false
	}
	cur.next = h.Seq + 1
	s.next[h.Origin] = cur
	return true
}
