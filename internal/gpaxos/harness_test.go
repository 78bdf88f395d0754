package gpaxos

import (
	"math/rand"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// net is a minimal synchronous test network: every Ready is persisted at
// once and its messages delivered in FIFO order; crashed servers drop what
// they receive. The simulator in sim/ is the real test bed; this one checks
// the basic paths in isolation.
type net struct {
	t       *testing.T
	nodes   map[ID]*Node
	order   []ID
	down    map[ID]bool
	queue   []Message
	applied map[ID][]Entry
}

func newNet(t *testing.T, v quorum.Config, topo Topology) *net {
	nw := &net{t: t, nodes: map[ID]*Node{}, down: map[ID]bool{}, applied: map[ID][]Entry{}}
	for _, g := range v.Groups {
		for _, id := range g {
			r := rand.New(rand.NewSource(int64(id)))
			n, err := NewNode(Config{ID: id, Voters: v, Topology: topo, HeartbeatTicks: 2, ElectionTicks: 10, Rand: r.Intn})
			if err != nil {
				t.Fatal(err)
			}
			nw.nodes[id] = n
			nw.order = append(nw.order, id)
		}
	}
	return nw
}

// settle drains Readies and messages until quiet.
func (nw *net) settle() {
	for round := 0; round < 10000; round++ {
		progress := false
		for _, id := range nw.order {
			n := nw.nodes[id]
			if nw.down[id] || !n.HasReady() {
				continue
			}
			rd := n.Ready()
			nw.queue = append(append(nw.queue, rd.Early...), rd.Messages...)
			nw.applied[id] = append(nw.applied[id], rd.CommittedEntries...)
			n.Advance()
			progress = true
		}
		for len(nw.queue) > 0 {
			m := nw.queue[0]
			nw.queue = nw.queue[1:]
			if !nw.down[m.To] && nw.nodes[m.To] != nil {
				nw.nodes[m.To].Step(m)
			}
			progress = true
		}
		if !progress {
			return
		}
	}
	nw.t.Fatal("network did not settle")
}

// tick advances every live node k ticks, settling after each.
func (nw *net) tick(k int) {
	for i := 0; i < k; i++ {
		for _, id := range nw.order {
			if !nw.down[id] {
				nw.nodes[id].Tick()
			}
		}
		nw.settle()
	}
}

func (nw *net) leader() *Node {
	for _, id := range nw.order {
		if !nw.down[id] && nw.nodes[id].Status().Leader {
			return nw.nodes[id]
		}
	}
	return nil
}

// payloads returns the normal entries id applied.
func (nw *net) payloads(id ID) []string {
	var out []string
	for _, e := range nw.applied[id] {
		if e.Type == EntryNormal {
			out = append(out, string(e.Data))
		}
	}
	return out
}

func grid(groups, size int) quorum.Config {
	var c quorum.Config
	id := ID(1)
	for g := 0; g < groups; g++ {
		var m []ID
		for i := 0; i < size; i++ {
			m = append(m, id)
			id++
		}
		c.Groups = append(c.Groups, m)
	}
	return c
}
