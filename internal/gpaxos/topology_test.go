package gpaxos

import (
	"math/rand"
	"slices"
	"testing"
)

// TestTreesOfDifferentConfigurationsHaveNoCycle: members whose
// configurations differ (a server added or removed, the coordinator itself
// removed in some) each forward down the tree their own member list gives,
// and a message must still never come back to a server: the union of
// everyone's forwarding edges has no cycle. Trees rotated from wherever the
// list put the coordinator, with the coordinator missing from some lists,
// sent group appends around a cycle for ever.
func TestTreesOfDifferentConfigurationsHaveNoCycle(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for trial := 0; trial < 2000; trial++ {
		all := []ID{}
		for id := ID(1); id <= ID(3+r.Intn(12)); id++ {
			all = append(all, id)
		}
		root := all[r.Intn(len(all))]
		var down []ID
		for _, id := range all {
			if r.Intn(6) == 0 {
				down = append(down, id)
			}
		}
		topo := TreeTopology{Fanout: 1 + r.Intn(3)}
		// Each server's list: all, less a few servers (the root among
		// them sometimes), in id order as configurations keep them.
		lists := map[ID][]ID{}
		for _, id := range all {
			var l []ID
			for _, m := range all {
				if m == id || r.Intn(5) != 0 {
					l = append(l, m)
				}
			}
			lists[id] = l
		}
		edges := map[ID][]ID{}
		for _, id := range all {
			edges[id] = topo.Children(lists[id], root, down, id)
		}
		// Depth-first search for a cycle.
		state := map[ID]int{} // 1: on the path, 2: done
		var visit func(id ID) bool
		visit = func(id ID) bool {
			state[id] = 1
			for _, c := range edges[id] {
				if state[c] == 1 || state[c] == 0 && visit(c) {
					return true
				}
			}
			state[id] = 2
			return false
		}
		for _, id := range all {
			if state[id] == 0 && visit(id) {
				t.Fatalf("trial %d: forwarding cycle; root %d, down %v, lists %v, edges %v", trial, root, down, lists, edges)
			}
		}
	}
}

// TestTreeOrderKeepsTheListOrderWhenRootIsAMember: a list holding the
// root orders the others cyclically after it, down members last.
func TestTreeOrderKeepsTheListOrderWhenRootIsAMember(t *testing.T) {
	got := treeOrder([]ID{1, 4, 7, 10, 13}, 7, []ID{10})
	if want := []ID{7, 13, 1, 4, 10}; !slices.Equal(got, want) {
		t.Fatalf("treeOrder = %v, want %v", got, want)
	}
	got = treeOrder([]ID{1, 4, 10, 13}, 7, nil)
	if want := []ID{7, 10, 13, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("root not a member: treeOrder = %v, want %v", got, want)
	}
}
