package forest

import (
	"fmt"
	"os"
	"reflect"
	"testing"
)

// Property tests: random histories of joins and departures, every invariant
// of CheckInvariants checked along the way, each Update's Moves checked
// against an independent diff of the parent edges, the bounds on moved
// edges checked on every operation, and the final forest checked against a
// replay of the same changes.
//
// The default run covers, per configuration, a thousand short histories
// (N <= 40, every step checked), dozens of medium ones (N <= 300)
// and a few that climb to N = 1000 and wander there. GIRAFFE_FOREST_SWEEP=big
// multiplies every count by ten; -short divides the short and medium counts
// by ten.

// sweep is one family of random histories.
type sweep struct {
	name       string
	seqs       int  // number of histories
	maxN       int  // servers at most
	ops        int  // changes per history
	checkEvery int  // CheckInvariants every this many changes
	diffEvery  int  // compare Moves with an independent diff every this many changes
	startAtMax bool // climb to maxN first
}

func sweeps() []sweep {
	s := []sweep{
		{name: "small", seqs: 1000, maxN: 40, ops: 80, checkEvery: 1, diffEvery: 2},
		{name: "medium", seqs: 30, maxN: 300, ops: 700, checkEvery: 5, diffEvery: 10},
		{name: "large", seqs: 3, maxN: 1000, ops: 2500, checkEvery: 25, diffEvery: 100, startAtMax: true},
	}
	scale := func(i, num, den int) { s[i].seqs = max(1, s[i].seqs*num/den) }
	if os.Getenv("GIRAFFE_FOREST_SWEEP") == "big" {
		for i := range s {
			scale(i, 10, 1)
		}
	} else if testing.Short() {
		scale(0, 1, 10)
		scale(1, 1, 10)
	}
	return s
}

// moveBounds returns the most parent edges one join and one departure may
// move (doc.go derives them), or -1 where no bound is promised (t > c).
func moveBounds(cfg Config) (join, leave int) {
	t, c := cfg.Trees, cfg.MaxChildren
	if t > c {
		return -1, -1
	}
	return max(1, t-1), 3*c + 4*t
}

// stats accumulates what the doc reports.
type stats struct {
	joins, leaves       int
	joinMoves, leaveMov int
	joinMax, leaveMax   int
	recolors            int
	heightMax           map[int]int // n bucket (upper bound) -> tallest tree seen
}

func (s *stats) add(u Update) {
	m := len(u.Moves)
	if u.Change.Op == OpJoin {
		s.joins++
		s.joinMoves += m
		s.joinMax = max(s.joinMax, m)
		return
	}
	s.leaves++
	s.leaveMov += m
	s.leaveMax = max(s.leaveMax, m)
	s.recolors += len(u.Recolors)
}

func (s *stats) height(f *Forest) {
	bucket := 10
	for bucket < f.Len() {
		bucket *= 10
	}
	h := 0
	for k := range f.Config().Trees {
		h = max(h, f.TreeHeight(Color(k)))
	}
	s.heightMax[bucket] = max(s.heightMax[bucket], h)
}

func (s *stats) String() string {
	return fmt.Sprintf("joins %d: moved edges max %d mean %.2f; leaves %d: max %d mean %.2f, recolor on %.0f%%; tallest tree by n<=10,100,1000: %d,%d,%d",
		s.joins, s.joinMax, float64(s.joinMoves)/float64(max(1, s.joins)),
		s.leaves, s.leaveMax, float64(s.leaveMov)/float64(max(1, s.leaves)),
		100*float64(s.recolors)/float64(max(1, s.leaves)),
		s.heightMax[10], s.heightMax[100], s.heightMax[1000])
}

// runHistory plays one random history on a fresh forest of shape cfg.
func runHistory(t *testing.T, cfg Config, sw sweep, seed uint64, st *stats) {
	f := mustNew(t, cfg)
	h := newHistory(seed, sw.maxN, sw.startAtMax)
	joinBound, leaveBound := moveBounds(cfg)
	var changes []Change
	for op := 0; op < sw.ops; op++ {
		ch := h.step(f)
		diff := sw.diffEvery > 0 && op%sw.diffEvery == 0
		var before edges
		var wantColor Color
		if diff {
			before = parents(f)
			sizes := f.GroupSizes()
			for k := range sizes {
				if sizes[k] < sizes[wantColor] {
					wantColor = Color(k)
				}
			}
		}
		u, err := f.Apply(ch)
		if err != nil {
			t.Fatalf("seed %d op %d %v: %v", seed, op, ch, err)
		}
		changes = append(changes, ch)
		st.add(u)
		if m := len(u.Moves); ch.Op == OpJoin && joinBound >= 0 && m > joinBound ||
			ch.Op == OpLeave && leaveBound >= 0 && m > leaveBound {
			t.Fatalf("seed %d op %d %v at n=%d moved %d edges, bounds join %d leave %d", seed, op, ch, f.Len(), m, joinBound, leaveBound)
		}
		if diff {
			if got, want := u.Moves, diffMoves(before, parents(f)); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d op %d %v: Update.Moves\n%v\nindependent diff\n%v", seed, op, ch, got, want)
			}
			if ch.Op == OpJoin && u.Color != wantColor {
				t.Fatalf("seed %d op %d: joiner got color %d, smallest group is %d", seed, op, u.Color, wantColor)
			}
		}
		if op%sw.checkEvery == 0 || op == sw.ops-1 {
			if err := f.CheckInvariants(); err != nil {
				t.Fatalf("seed %d op %d %v (n=%d): %v", seed, op, ch, f.Len(), err)
			}
			st.height(f)
		}
	}
	g, err := Replay(cfg, changes)
	if err != nil {
		t.Fatalf("seed %d: replay: %v", seed, err)
	}
	if !sameForest(f, g) {
		t.Fatalf("seed %d: replaying the same %d changes gave a different forest", seed, len(changes))
	}
}

func TestPropertyRandomHistories(t *testing.T) {
	for si, sh := range append(append([]shape(nil), paperShapes...), wideShapes...) {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			st := &stats{heightMax: make(map[int]int)}
			for wi, sw := range sweeps() {
				if si >= len(paperShapes) {
					// Wide shapes scan for hosts on most placements (and
					// 2-1 is a pair of chains); a tenth of the histories,
					// up to 300 servers, is plenty to show validity.
					sw.seqs = max(1, sw.seqs/10)
					sw.maxN = min(sw.maxN, 300)
				}
				for seq := range sw.seqs {
					runHistory(t, sh.cfg, sw, uint64(si)<<40|uint64(wi)<<32|uint64(seq), st)
				}
			}
			t.Logf("%s: %s", sh.cfg, st)
		})
	}
}
