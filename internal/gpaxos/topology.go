package gpaxos

import "slices"

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
// configuration order starting after root, then the members in down. Down
// members still receive (as leaves at the end, so they forward to no one):
// a member wrongly suspected, or back from a crash, hears from its
// coordinator again and answers, which takes it off the list.
func treeOrder(members []ID, root ID, down []ID) []ID {
	order := []ID{root}
	var tail []ID
	start := slices.Index(members, root)
	for k := 1; k <= len(members); k++ {
		id := members[(start+k+len(members))%len(members)]
		switch {
		case id == root:
		case slices.Contains(down, id):
			tail = append(tail, id)
		default:
			order = append(order, id)
		}
	}
	return append(order, tail...)
}
