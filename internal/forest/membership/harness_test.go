package membership

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// harness runs Nodes in virtual time over an in-memory network: every
// message is delivered after a delay of 1..maxDelay ticks drawn from a
// seeded generator, unless its destination crashed, a filter drops it, or
// random loss does. Nothing reads a clock or spawns a goroutine, so a seed
// reproduces a run exactly (trace hashes every delivery).
type harness struct {
	t        *testing.T
	cfg      Config
	rng      *rand.Rand
	now      int64
	nodes    map[forest.ServerID]*Node
	crashed  map[forest.ServerID]bool
	inflight []envelope
	seq      uint64
	maxDelay int
	lossPct  int
	drop     func(Message) bool
	trace    uint64
	// copies records, per disseminated message, the servers that received
	// at least one copy of it.
	copies map[forest.MsgID]map[forest.ServerID]bool
}

type envelope struct {
	at  int64
	seq uint64
	m   Message
}

func newHarness(t *testing.T, cfg Config, seed uint64) *harness {
	return &harness{
		t: t, cfg: cfg, rng: rand.New(rand.NewPCG(seed, 99)), maxDelay: 2,
		nodes: make(map[forest.ServerID]*Node), crashed: make(map[forest.ServerID]bool),
		copies: make(map[forest.MsgID]map[forest.ServerID]bool),
	}
}

func (h *harness) ids() []forest.ServerID {
	ids := make([]forest.ServerID, 0, len(h.nodes))
	for id := range h.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (h *harness) alive() []forest.ServerID {
	var ids []forest.ServerID
	for _, id := range h.ids() {
		if !h.crashed[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func (h *harness) bootstrap(id forest.ServerID) {
	n, err := Bootstrap(h.cfg, id, fmt.Sprintf("s%d", id))
	if err != nil {
		h.t.Fatal(err)
	}
	h.nodes[id] = n
}

func (h *harness) join(id forest.ServerID, contacts ...forest.ServerID) {
	n, err := NewJoiner(h.cfg, id, fmt.Sprintf("s%d", id), contacts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.nodes[id] = n
}

func (h *harness) crash(id forest.ServerID) { h.crashed[id] = true }

func (h *harness) collect(n *Node) {
	for _, m := range n.Outbox() {
		h.seq++
		h.inflight = append(h.inflight, envelope{at: h.now + 1 + int64(h.rng.IntN(h.maxDelay)), seq: h.seq, m: m})
	}
}

// step advances virtual time by one tick: due messages are delivered in
// (time, send order), then every live node ticks in id order.
func (h *harness) step() {
	h.now++
	var due, later []envelope
	for _, e := range h.inflight {
		if e.at <= h.now {
			due = append(due, e)
		} else {
			later = append(later, e)
		}
	}
	h.inflight = later
	slices.SortFunc(due, func(a, b envelope) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.seq, b.seq)) })
	for _, e := range due {
		m := e.m
		n := h.nodes[m.To]
		if n == nil || h.crashed[m.To] || h.crashed[m.From] || h.drop != nil && h.drop(m) ||
			h.lossPct > 0 && h.rng.IntN(100) < h.lossPct {
			continue
		}
		hs := fnv.New64a()
		fmt.Fprintf(hs, "%d %v %d %v %d", h.now, m, m.Change.Server, m.Tag, m.Color)
		h.trace = h.trace*31 + hs.Sum64()
		if m.Disseminated {
			if h.copies[m.Tag] == nil {
				h.copies[m.Tag] = make(map[forest.ServerID]bool)
			}
			h.copies[m.Tag][m.To] = true
		}
		n.Step(m)
		h.collect(n)
	}
	for _, id := range h.ids() {
		if !h.crashed[id] {
			h.nodes[id].Tick()
			h.collect(h.nodes[id])
		}
	}
}

// runUntil steps until cond holds, failing the test after limit ticks.
func (h *harness) runUntil(what string, limit int, cond func() error) int {
	h.t.Helper()
	var err error
	for i := 0; i < limit; i++ {
		if err = cond(); err == nil {
			return i
		}
		h.step()
	}
	h.t.Fatalf("%s: not reached within %d ticks (now %d): %v", what, limit, h.now, err)
	return limit
}

// converged checks that every live node is a member of one and the same
// view, whose members are exactly the live nodes, and whose forest is valid.
func (h *harness) converged() error {
	alive := h.alive()
	ref := h.nodes[alive[0]].View()
	if ref.Forest == nil {
		return fmt.Errorf("server %d has no view", alive[0])
	}
	for _, id := range alive {
		v := h.nodes[id].View()
		if v.ID != ref.ID || v.Rooter != ref.Rooter {
			return fmt.Errorf("server %d holds view %s (Rooter %d), server %d holds %s (Rooter %d)", id, v.ID, v.Rooter, alive[0], ref.ID, ref.Rooter)
		}
		if !reflect.DeepEqual(v.Forest.Snapshot(), ref.Forest.Snapshot()) {
			return fmt.Errorf("servers %d and %d hold different forests for view %s", id, alive[0], v.ID)
		}
	}
	if got := ref.Forest.Servers(); !slices.Equal(got, alive) {
		return fmt.Errorf("view %s has members %v, live servers are %v", ref.ID, got, alive)
	}
	if !h.nodes[ref.Rooter].IsRooter() || h.crashed[ref.Rooter] {
		return fmt.Errorf("Rooter %d is not a live Rooter", ref.Rooter)
	}
	return ref.Forest.CheckInvariants()
}

// ensemble starts server 1 and lets servers 2..n join one every other tick,
// each through two random servers already started, then runs to agreement.
func ensemble(t *testing.T, cfg Config, n int, seed uint64) *harness {
	h := newHarness(t, cfg, seed)
	h.bootstrap(1)
	for id := forest.ServerID(2); id <= forest.ServerID(n); id++ {
		started := h.ids()
		h.join(id, started[h.rng.IntN(len(started))], started[h.rng.IntN(len(started))])
		h.step()
		h.step()
	}
	h.runUntil("ensemble agreement", 40*n+200, h.converged)
	return h
}

func testConfig(f forest.Config) Config {
	return Config{Forest: f, HeartbeatTicks: 2, LeaseTicks: 8, RetryTicks: 4, ElectionTicks: 5, Window: 256}
}
