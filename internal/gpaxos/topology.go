package gpaxos

import (
	"cmp"
	"slices"
)

// Topology is the dissemination topology of one group: given the group's
// members in configuration order, its coordinator (the root) and the members
// the coordinator routes around, it says to whom a server forwards the
// group's messages. It never decides safety (docs/protocol.md §1: the voting
// configuration and the dissemination topology are different things): a wrong or stale tree only delays
// messages, and catch-up repairs what a tree loses.
type Topology interface {
	// Children returns the servers id forwards group messages to. It must be
	// a pure function of its arguments so that every server computes the
	// same tree from the same inputs.
	Children(members []ID, root ID, down []ID, id ID) []ID
}

// TreeTopology arranges a group as a complete tree of the given fan-out
// rooted at the coordinator: the root, then the other live members in
// configuration order starting after the root, laid out breadth first. This
// is the shape the Giraffe paper's forest gives the interior of one tree.
type TreeTopology struct {
	Fanout int
}

// StarTopology has the coordinator send to every member directly: classic,
// leader-centric mode.
type StarTopology struct{}

// Children implements Topology.
func (t TreeTopology) Children(members []ID, root ID, down []ID, id ID) []ID {
	order := treeOrder(members, root, down)
	i := slices.Index(order, id)
	f := max(t.Fanout, 1)
	if i < 0 {
		return nil
	}
	lo, hi := i*f+1, i*f+f+1
	if lo >= len(order) {
		return nil
	}
	return order[lo:min(hi, len(order))]
}

// Children implements Topology.
func (StarTopology) Children(members []ID, root ID, down []ID, id ID) []ID {
	if id != root {
		return nil
	}
	order := treeOrder(members, root, down)
	return order[1:]
}

// treeOrder lists root first, then every member not in down, in cyclic
// order of server id starting after root, then the members in down. Down
// members still receive (as leaves at the end, so they forward to no one):
// a member wrongly suspected, or back from a crash, hears from its
// coordinator again and answers, which takes it off the list.
//
// The order depends on the ids only, not on where the member list puts
// them or whether it holds root: members whose configurations differ (one
// has applied a change the other has not, or removed the coordinator)
// compute different trees, and each forwards only to members after it in
// the one order they share, so a message never travels in a cycle.
func treeOrder(members []ID, root ID, down []ID) []ID {
	rest := make([]ID, 0, len(members))
	for _, id := range members {
		if id != root {
			rest = append(rest, id)
		}
	}
	// Cyclic distance after root, as unsigned arithmetic wraps.
	slices.SortFunc(rest, func(a, b ID) int { return cmp.Compare(uint64(a)-uint64(root), uint64(b)-uint64(root)) })
	order := []ID{root}
	var tail []ID
	for _, id := range rest {
		if slices.Contains(down, id) {
			tail = append(tail, id)
		} else {
			order = append(order, id)
		}
	}
	return append(order, tail...)
}
