package replica

import (
	"slices"
	"testing"
)

// A proposal that moves twice before the application hears of the first
// move is named once, with its numbers before both: the application files
// requests by the numbers it knows, in one pass over the Delivery.
func TestResentComposesMovesNotYetDelivered(t *testing.T) {
	var s streams
	mv := s.mover()
	mv.move(7, 10, 8, 1)
	mv.move(7, 11, 8, 2)
	mv = s.mover() // a second leader change settles before any Delivery
	mv.move(8, 1, 9, 1)
	mv.move(8, 2, 9, 2)
	mv.move(8, 3, 9, 3) // proposed between the two changes
	want := []Resend{
		{OldStream: 7, OldSeq: 10, NewStream: 9, NewSeq: 1},
		{OldStream: 7, OldSeq: 11, NewStream: 9, NewSeq: 2},
		{OldStream: 8, OldSeq: 3, NewStream: 9, NewSeq: 3},
	}
	if !slices.Equal(s.pendingResent, want) {
		t.Fatalf("pending moves %v, want %v", s.pendingResent, want)
	}
}
