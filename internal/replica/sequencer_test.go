package replica

import "testing"

// TestSequencerRefusesLateCopyOfEarlierIncarnation: a server that lost its
// disk proposes again as a new incarnation, whose streams count afresh; a
// duplicated message of its earlier incarnation arriving after that must
// still meet the earlier incarnation's position and be refused.
func TestSequencerRefusesLateCopyOfEarlierIncarnation(t *testing.T) {
	var s sequencer
	s.reset(9)
	old := proposalHeader{Origin: 1, Inc: 0xa, Stream: 2<<32 | 1, Seq: 1}
	fresh := proposalHeader{Origin: 1, Inc: 0xb, Stream: 1<<32 | 1, Seq: 1}
	steps := []struct {
		h    proposalHeader
		want bool
	}{
		{old, true},
		{fresh, true},
		{old, false}, // the late copy
		{proposalHeader{Origin: 1, Inc: 0xb, Stream: 1<<32 | 1, Seq: 2}, true},
		{proposalHeader{Origin: 1, Inc: 0xa, Stream: 2<<32 | 1, Seq: 3}, false}, // a gap
	}
	for i, st := range steps {
		if got := s.admit(st.h); got != st.want {
			t.Fatalf("step %d: admit(%+v) = %v, want %v", i, st.h, got, st.want)
		}
	}
}
