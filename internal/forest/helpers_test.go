package forest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// shape is a forest configuration under test.
type shape struct {
	name string
	cfg  Config
}

// paperShapes are the configurations the issue names: classic mode (a star
// over up to 1000 servers) and the t-c forests of the paper's evaluation.
var paperShapes = []shape{
	{"classic 1-999", Config{Trees: 1, MaxChildren: 999}},
	{"3-3", Config{Trees: 3, MaxChildren: 3}},
	{"3-5", Config{Trees: 3, MaxChildren: 5}},
	{"5-10", Config{Trees: 5, MaxChildren: 10}},
	{"9-9", Config{Trees: 9, MaxChildren: 9}},
}

// wideShapes have more trees than children, where disjointness is lost
// almost everywhere; the forest must still be valid and low.
var wideShapes = []shape{
	{"4-2", Config{Trees: 4, MaxChildren: 2}},
	{"9-3", Config{Trees: 9, MaxChildren: 3}},
	{"2-1", Config{Trees: 2, MaxChildren: 1}},
}

func mustNew(t testing.TB, cfg Config) *Forest {
	t.Helper()
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func mustJoin(t testing.TB, f *Forest, id ServerID) Update {
	t.Helper()
	u, err := f.Join(id, fmt.Sprintf("10.0.%d.%d:2888", id/256, id%256))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func mustLeave(t testing.TB, f *Forest, id ServerID) Update {
	t.Helper()
	u, err := f.Leave(id)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// grow returns a forest of shape cfg after joins of servers 1..n.
func grow(t testing.TB, cfg Config, n int) *Forest {
	t.Helper()
	f := mustNew(t, cfg)
	for id := 1; id <= n; id++ {
		mustJoin(t, f, ServerID(id))
	}
	return f
}

// edges is every parent edge of a forest, read through the public API only:
// server -> parent in each tree (None for a root).
type edges map[ServerID][]ServerID

func parents(f *Forest) edges {
	e := make(edges, f.Len())
	for _, id := range f.Servers() {
		ps := make([]ServerID, f.Config().Trees)
		for k := range ps {
			p, ok := f.Parent(Color(k), id)
			if !ok {
				p = None
			}
			ps[k] = p
		}
		e[id] = ps
	}
	return e
}

// diffMoves computes, independently of the forest's own recorder, the parent
// edges that changed between two edge sets for servers present in both.
func diffMoves(before, after edges) []Move {
	var moves []Move
	for id, to := range after {
		from, ok := before[id]
		if !ok {
			continue
		}
		for k := range to {
			if from[k] != to[k] {
				moves = append(moves, Move{Tree: Color(k), Server: id, From: from[k], To: to[k]})
			}
		}
	}
	slices.SortFunc(moves, func(a, b Move) int {
		return cmp.Or(cmp.Compare(a.Tree, b.Tree), cmp.Compare(a.Server, b.Server))
	})
	return moves
}

// history generates a random sequence of membership changes: it drifts
// toward a target size, changes the target now and then (so sequences grow,
// shrink in bursts and grow again), and sometimes lets a departed id join
// again.
type history struct {
	rng      *rand.Rand
	maxN     int
	target   int
	next     ServerID
	departed []ServerID
}

func newHistory(seed uint64, maxN int, startAtMax bool) *history {
	h := &history{rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), maxN: maxN, next: 1}
	h.target = 1 + h.rng.IntN(maxN)
	if startAtMax {
		h.target = maxN
	}
	return h
}

// step returns the next change for forest f.
func (h *history) step(f *Forest) Change {
	if h.rng.IntN(max(40, h.maxN/2)) == 0 {
		h.target = 1 + h.rng.IntN(h.maxN)
	}
	n := f.Len()
	join := n == 0
	if !join && n < h.maxN {
		p := 35 // percent chance of a join when at or above target
		if n < h.target {
			p = 80
		}
		join = h.rng.IntN(100) < p
	}
	if join {
		if len(h.departed) > 0 && h.rng.IntN(10) == 0 {
			i := h.rng.IntN(len(h.departed))
			id := h.departed[i]
			h.departed = slices.Delete(h.departed, i, i+1)
			return Change{Op: OpJoin, Server: id, Addr: "rejoined"}
		}
		h.next++
		return Change{Op: OpJoin, Server: h.next - 1, Addr: "new"}
	}
	ids := f.Servers()
	id := ids[h.rng.IntN(len(ids))]
	h.departed = append(h.departed, id)
	return Change{Op: OpLeave, Server: id}
}

func sameForest(a, b *Forest) bool {
	return reflect.DeepEqual(a.Snapshot(), b.Snapshot())
}
