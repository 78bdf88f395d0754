package forest

import (
	"cmp"
	"fmt"
	"slices"
)

// Op is the kind of a membership change.
type Op uint8

// The membership changes a forest applies.
const (
	OpJoin  Op = 1 // a server joins: it gets the color of the smallest group
	OpLeave Op = 2 // a server departs or is removed after a failure
)

// String returns "join" or "leave".
func (o Op) String() string {
	switch o {
	case OpJoin:
		return "join"
	case OpLeave:
		return "leave"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Change is one membership change. An ordered list of Changes determines the
// forest (Replay), so in the replicated ensemble the Changes are what gets
// committed and every server derives the same topology from them.
type Change struct {
	Op     Op
	Server ServerID
	Addr   string // the joining server's address; empty for OpLeave
}

// Move is one parent edge that an operation changed: in tree Tree, Server's
// parent went From → To (None for "was / became the root"). Servers that
// join or leave in the operation are not listed; a recolored server is.
type Move struct {
	Tree     Color
	Server   ServerID
	From, To ServerID
}

// Recolor records that a departure moved Server from group From to group To
// to keep the groups within one of each other. For the voting layer this is
// a configuration change of its own (see doc.go).
type Recolor struct {
	Server   ServerID
	From, To Color
}

// Update describes what one Change did to the forest.
type Update struct {
	Change Change
	// Color is the color the joining server received, or the color the
	// departing server had.
	Color Color
	// Recolors lists the servers that changed group (at most one, on a
	// departure).
	Recolors []Recolor
	// Moves lists every changed parent edge of the servers present both
	// before and after, sorted by tree, then server.
	Moves []Move
	// Roots lists the trees whose root (group coordinator) changed, in
	// ascending color order.
	Roots []RootChange
}

// RootChange records that the root of Tree went From → To (None when the
// forest was or became empty).
type RootChange struct {
	Tree     Color
	From, To ServerID
}

// Apply performs ch on f.
func (f *Forest) Apply(ch Change) (Update, error) {
	switch ch.Op {
	case OpJoin:
		return f.Join(ch.Server, ch.Addr)
	case OpLeave:
		return f.Leave(ch.Server)
	}
	return Update{}, fmt.Errorf("forest: unknown change op %d", uint8(ch.Op))
}

// Replay builds the forest that the ordered changes produce from an empty
// forest of shape cfg. Every server that replays the same list gets the same
// forest.
func Replay(cfg Config, changes []Change) (*Forest, error) {
	f, err := New(cfg)
	if err != nil {
		return nil, err
	}
	for i, ch := range changes {
		if _, err := f.Apply(ch); err != nil {
			return nil, fmt.Errorf("forest: change %d: %w", i, err)
		}
	}
	return f, nil
}

// finish turns the recorder's notes into the Update of the operation just
// performed. skip is the server that joined or left; roots are the roots
// before the operation.
func (f *Forest) finish(u Update, skip ServerID, roots []ServerID) Update {
	for k, r := range f.Roots() {
		if r != roots[k] {
			u.Roots = append(u.Roots, RootChange{Tree: Color(k), From: roots[k], To: r})
		}
	}
	for _, key := range f.rec.order {
		if key.server == skip {
			continue
		}
		n := f.nodes[key.server]
		to := None
		if p := n.links[key.tree].parent; p != nil {
			to = p.id
		}
		if from := f.rec.orig[key]; from != to {
			u.Moves = append(u.Moves, Move{Tree: key.tree, Server: key.server, From: from, To: to})
		}
	}
	slices.SortFunc(u.Moves, func(a, b Move) int {
		return cmp.Or(cmp.Compare(a.Tree, b.Tree), cmp.Compare(a.Server, b.Server))
	})
	return u
}
