package forest

import (
	"slices"
	"testing"
)

func TestReceiverDeliversOnceForwardsEachColorOnce(t *testing.T) {
	f := grow(t, Config{3, 3}, 30)
	self := f.Group(1)[1] // interior in tree 1 only
	r := newReceiver(self, 0)
	m := msgID{Origin: 1, Seq: 10}
	steps := []struct {
		color   Color
		deliver bool
		forward []ServerID
	}{
		{0, true, nil},                  // first copy: deliver; a leaf in tree 0
		{1, false, f.Children(1, self)}, // second color: no delivery, but forward in tree 1
		{1, false, nil},                 // the same color again: dropped
		{2, false, nil},
		{0, false, nil},
	}
	for i, s := range steps {
		deliver, next := r.receive(f, m, s.color)
		var to []ServerID
		for _, h := range next {
			if h.Color != s.color {
				t.Fatalf("step %d: hop tagged %d, copy was %d", i, h.Color, s.color)
			}
			to = append(to, h.To)
		}
		if deliver != s.deliver || !slices.Equal(to, s.forward) {
			t.Fatalf("step %d (color %d): deliver %v to %v, want %v %v", i, s.color, deliver, to, s.deliver, s.forward)
		}
	}
	if len(steps[1].forward) == 0 {
		t.Fatal("test setup: the chosen server has no children in its own tree")
	}
}

func TestReceiverWindow(t *testing.T) {
	f := grow(t, Config{3, 3}, 9)
	r := newReceiver(1, 4)
	recv := func(origin ServerID, seq uint64) bool {
		d, _ := r.receive(f, msgID{Origin: origin, Seq: seq}, 0)
		return d
	}
	for _, tc := range []struct {
		origin ServerID
		seq    uint64
		want   bool
	}{
		{7, 1, true},
		{7, 3, true},
		{7, 2, true},  // out of order but inside the window
		{7, 3, false}, // duplicate
		{7, 6, true},  // window now (2,6]
		{7, 2, false}, // fell out of the window: treated as a duplicate
		{7, 3, false}, // remembered as seen
		{8, 2, true},  // windows are per origin
		{7, 0, false},
		{7, ^uint64(0), true}, // no wrap-around in the window arithmetic
		{7, ^uint64(0) - 2, true},
		{7, 6, false},
	} {
		if got := recv(tc.origin, tc.seq); got != tc.want {
			t.Fatalf("origin %d seq %d: deliver %v, want %v", tc.origin, tc.seq, got, tc.want)
		}
	}
	r.forget(7)
	if !recv(7, 5) {
		t.Fatal("after forget, an old message of the origin is new again")
	}
	if d, next := r.receive(f, msgID{Origin: 9, Seq: 1}, MaxTrees); d || next != nil {
		t.Fatal("a copy with an impossible color was accepted")
	}
}

// TestEveryServerGetsOneCopyPerTree: with nothing crashed, each server
// receives exactly t copies (one per tree, from its parent there) and
// delivers once, so dissemination costs t·(n-1)+t messages, none wasted on
// cycles.
func TestEveryServerGetsOneCopyPerTree(t *testing.T) {
	for _, sh := range paperShapes {
		for _, n := range []int{1, 2, 5, 27, 100} {
			f := grow(t, sh.cfg, n)
			copies := make(map[ServerID][]Color)
			recv := make(map[ServerID]*receiver)
			delivered := 0
			queue := start(f)
			if len(queue) != sh.cfg.Trees {
				t.Fatalf("start sent %d copies for %d trees", len(queue), sh.cfg.Trees)
			}
			for len(queue) > 0 {
				h := queue[0]
				queue = queue[1:]
				copies[h.To] = append(copies[h.To], h.Color)
				if recv[h.To] == nil {
					recv[h.To] = newReceiver(h.To, 0)
				}
				d, next := recv[h.To].receive(f, msgID{Origin: 1, Seq: 1}, h.Color)
				if d {
					delivered++
				}
				queue = append(queue, next...)
			}
			if delivered != n {
				t.Fatalf("%s n=%d: %d deliveries", sh.cfg, n, delivered)
			}
			for _, id := range f.Servers() {
				got := slices.Sorted(slices.Values(copies[id]))
				want := make([]Color, sh.cfg.Trees)
				for k := range want {
					want[k] = Color(k)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s n=%d: server %d received colors %v", sh.cfg, n, id, got)
				}
			}
		}
	}
}

// copyReach counts the servers that the copy of color k reaches with nothing
// crashed. With literal set it follows the paper's rule, "a node delivers
// messages to its children only when it has the same color with the message
// tag"; otherwise the forest's rule, forward in the tree of the tag.
func copyReach(f *Forest, k Color, literal bool) int {
	reached := 0
	for queue := start(f)[k : k+1]; len(queue) > 0; queue = queue[1:] {
		h := queue[0]
		reached++
		if c, _ := f.Color(h.To); !literal || c == h.Color {
			queue = append(queue, forward(f, h.To, h.Color)...)
		}
	}
	return reached
}

// TestForwardInTheTagTreeNotByOwnColor: wherever a foreign server has
// children (beyond disjointness, trees of empty groups, t > c), the paper's
// literal rule strands its subtree and that copy is lost there; forwarding
// in the tag's tree delivers every copy to every server. In a disjoint
// forest the two rules agree.
func TestForwardInTheTagTreeNotByOwnColor(t *testing.T) {
	lost := 0
	for _, tc := range []struct {
		cfg      Config
		n        int
		disjoint bool
	}{
		{Config{3, 3}, 5, false}, {Config{9, 9}, 3, false}, {Config{9, 9}, 105, false}, {Config{4, 2}, 40, false},
		{Config{3, 3}, 27, true}, {Config{9, 9}, 100, true},
	} {
		f := grow(t, tc.cfg, tc.n)
		for k := range tc.cfg.Trees {
			if got := copyReach(f, Color(k), false); got != tc.n {
				t.Errorf("%s n=%d: copy %d reaches %d servers", tc.cfg, tc.n, k, got)
			}
			miss := tc.n - copyReach(f, Color(k), true)
			if tc.disjoint && miss != 0 {
				t.Errorf("%s n=%d: the literal rule loses copy %d at %d servers of a disjoint forest", tc.cfg, tc.n, k, miss)
			}
			lost += miss
		}
	}
	if lost == 0 {
		t.Error("the literal rule lost no copy beyond disjointness; the cases no longer show the difference")
	}
}
