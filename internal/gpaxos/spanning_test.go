package gpaxos

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// TestForestTopologyTrees checks every tree ForestTopology lays out over
// random configurations, roots and down lists: each voter is reached once
// from the root, nobody has more than Fanout children, down members have
// none while the live servers have room for everyone, and while the group's live members have room for everyone else
// (the forest's disjointness condition) only they have children, so the
// trees of different groups share no interior server.
func TestForestTopologyTrees(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 2000; trial++ {
		groups, fan := 1+r.Intn(5), 1+r.Intn(5)
		var v quorum.Config
		id := ID(1)
		for g := 0; g < groups; g++ {
			var m []ID
			for i := 0; i < 1+r.Intn(8); i++ {
				m = append(m, id)
				id++
			}
			v.Groups = append(v.Groups, m)
		}
		n := int(id) - 1
		topo := ForestTopology{Fanout: fan}
		interior := map[ID]int{}
		for g, members := range v.Groups {
			root := members[r.Intn(len(members))]
			var down []ID
			for _, m := range members {
				if m != root && r.Intn(4) == 0 {
					down = append(down, m)
				}
			}
			seen := map[ID]int{}
			var walk func(ID, int)
			walk = func(x ID, depth int) {
				if depth > n {
					t.Fatalf("trial %d group %d: a cycle through %d", trial, g, x)
				}
				seen[x]++
				kids := topo.SpanChildren(v, g, root, down, x)
				if len(kids) > fan {
					t.Fatalf("trial %d group %d: %d has %d children, fan-out %d", trial, g, x, len(kids), fan)
				}
				if len(kids) > 0 && slices.Contains(down, x) && fan*(n-len(down)) >= n-1 {
					t.Fatalf("trial %d group %d: down member %d forwards to %v", trial, g, x, kids)
				}
				if len(kids) > 0 {
					interior[x]++
				}
				for _, k := range kids {
					walk(k, depth+1)
				}
			}
			walk(root, 0)
			for x := ID(1); x < id; x++ {
				if seen[x] != 1 {
					t.Fatalf("trial %d group %d (root %d, down %v, fan %d): %d reached %d times", trial, g, root, down, fan, x, seen[x])
				}
			}
			live := len(members) - len(down)
			if fan*live >= n-1 {
				for x := ID(1); x < id; x++ {
					if len(topo.SpanChildren(v, g, root, down, x)) > 0 && v.GroupOf(x) != g {
						t.Fatalf("trial %d group %d: %d of group %d is interior although the core has room", trial, g, x, v.GroupOf(x))
					}
				}
			}
		}
	}
}

// TestForestTopologyLearnsAcrossGroups: with the forest's dissemination, a
// group whose coordinator crashed keeps learning new commits from the
// other groups' trees before it elects a new coordinator; with a per-group
// tree it learns nothing until then. Acknowledgments go to a server's own
// coordinator only.
func TestForestTopologyLearnsAcrossGroups(t *testing.T) {
	for _, tc := range []struct {
		topo  Topology
		learn bool
	}{
		{ForestTopology{Fanout: 3}, true},
		{TreeTopology{Fanout: 3}, false},
	} {
		t.Run(fmt.Sprintf("%T", tc.topo), func(t *testing.T) {
			nw := newNet(t, grid(3, 3), tc.topo)
			nw.tick(40)
			gl := nw.leader()
			if gl == nil {
				t.Fatal("no leader elected")
			}
			gl.Propose([]byte("before"))
			nw.tick(2)
			var victim *Node
			for _, id := range nw.order {
				if n := nw.nodes[id]; n.Status().Coordinator && n != gl {
					victim = n
					break
				}
			}
			g := victim.Status().Group
			nw.down[victim.ID()] = true
			gl.Propose([]byte("after"))
			nw.settle()
			for _, id := range nw.voters().Groups[g] {
				if nw.down[id] {
					continue
				}
				got := nw.payloads(id)
				if learned := slices.Equal(got, []string{"before", "after"}); learned != tc.learn {
					t.Fatalf("server %d of the group without coordinator applied %v; learning across groups: want %v", id, got, tc.learn)
				}
				if nw.nodes[id].Status().Coordinator {
					t.Fatal("the group replaced its coordinator already; the test must run within an election timeout")
				}
			}
		})
	}
}

// TestForestTopologyAcksOwnCoordinator: under the forest's dissemination
// every acknowledgment goes to the sender's own coordinator, and the
// broadcast commits everywhere.
func TestForestTopologyAcksOwnCoordinator(t *testing.T) {
	nw := newNet(t, grid(3, 4), ForestTopology{Fanout: 2})
	nw.tick(40)
	gl := nw.leader()
	if gl == nil {
		t.Fatal("no leader elected")
	}
	coord := map[int]ID{}
	for _, id := range nw.order {
		if st := nw.nodes[id].Status(); st.Coordinator {
			coord[st.Group] = id
		}
	}
	var want []string
	acks, foreign := 0, 0
	for i := 0; i < 30; i++ {
		p := fmt.Sprintf("p%d", i)
		want = append(want, p)
		gl.Propose([]byte(p))
		settleObserving(nw, func(from *Node, m Message) {
			g := from.Status().Group
			switch {
			case m.Type == MsgGroupAck:
				acks++
				if m.To != coord[g] {
					t.Fatalf("server %d of group %d acknowledged to %d, its coordinator is %d", from.ID(), g, m.To, coord[g])
				}
			case m.Type == MsgGroupAppend && nw.nodes[m.To].Status().Group != m.Group:
				foreign++
			}
		})
	}
	nw.tick(3)
	if acks == 0 || foreign == 0 {
		t.Fatalf("%d acknowledgments and %d copies to other groups observed", acks, foreign)
	}
	for _, id := range nw.order {
		if got := nw.payloads(id); !slices.Equal(got, want) {
			t.Fatalf("server %d applied %v, want %v", id, got, want)
		}
	}
}

// settleObserving is net.settle that shows every message sent to see.
func settleObserving(nw *net, see func(from *Node, m Message)) {
	for round := 0; round < 10000; round++ {
		progress := false
		for _, id := range nw.order {
			n := nw.nodes[id]
			if nw.down[id] || !n.HasReady() {
				continue
			}
			rd := n.Ready()
			for _, m := range append(slices.Clone(rd.Early), rd.Messages...) {
				see(n, m)
			}
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
