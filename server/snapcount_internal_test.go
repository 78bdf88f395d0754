package server

import "testing"

// TestSnapCounterDrawsWithinHalfToFull: every draw lies in
// [snapCount - snapCount/2, snapCount], draws differ (members must not
// snapshot together), and a snapshot is due exactly when the count
// reaches the draw.
func TestSnapCounterDrawsWithinHalfToFull(t *testing.T) {
	for _, every := range []int{1, 2, 3, 100, 100000} {
		c := newSnapCounter(every)
		seen := map[int]bool{}
		for range 200 {
			if c.due < every-every/2 || c.due > every {
				t.Fatalf("snapCount %d: due %d outside [%d, %d]", every, c.due, every-every/2, every)
			}
			seen[c.due] = true
			for i := 0; i < c.due; i++ {
				if c.isDue() {
					t.Fatalf("snapCount %d: due after %d of %d entries", every, i, c.due)
				}
				c.applied()
			}
			if !c.isDue() {
				t.Fatalf("snapCount %d: not due after %d entries", every, c.due)
			}
			c.taken()
		}
		if every >= 100 && len(seen) < 10 {
			t.Fatalf("snapCount %d: only %d distinct counts in 200 draws", every, len(seen))
		}
	}
}
