package forest

import (
	"fmt"
	"slices"
)

// Forest is t interior-node-disjoint trees over the same set of servers (seed
// 000 §III-A). It is a pure value: no I/O, no clock, no randomness, and no
// decision depends on map iteration order or on the order of children in a
// slice, so the same sequence of Join and Leave calls gives the same forest on
// every server. A Forest is not safe for concurrent mutation; readers may
// share one that nobody mutates.
type Forest struct {
	cfg   Config
	nodes map[ServerID]*node
	trees []tree
	rec   recorder
}

// node is one server and its place in every tree.
type node struct {
	id    ServerID
	addr  string
	color Color
	// pos is the server's position in the core heap of its own tree; see
	// tree.core.
	pos int
	// interior has bit k set when the server has children in tree k.
	interior uint64
	links    []link // indexed by tree color
}

// link is a server's place in one tree. desc and height are the paper's
// "descendants" and "height" attributes, kept up to date on every edge
// change.
type link struct {
	parent   *node
	children []*node // in no meaningful order; never read for a decision without a key
	desc     int     // number of servers below this one
	height   int     // edges on the longest downward path, 0 for a leaf
}

// tree is one tree of the forest.
type tree struct {
	root *node
	// core holds the servers of this tree's color as an implicit c-ary heap:
	// core[0] is the root and core[p] (p > 0) is a child of core[(p-1)/c].
	// The heap shape is what bounds the height (see doc.go).
	core []*node
	// room holds the core positions whose server has fewer than c children.
	room bitset
	// hosts holds the foreign servers that have children in this tree, which
	// exist only while the tree overflows or its group is empty.
	hosts map[ServerID]*node
}

// New returns an empty forest of the given shape.
func New(cfg Config) (*Forest, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	f := &Forest{cfg: cfg, nodes: make(map[ServerID]*node), trees: make([]tree, cfg.Trees)}
	for k := range f.trees {
		f.trees[k].hosts = make(map[ServerID]*node)
	}
	return f, nil
}

// Config returns the shape of f.
func (f *Forest) Config() Config { return f.cfg }

// Len returns the number of servers in f.
func (f *Forest) Len() int { return len(f.nodes) }

// Contains reports whether id is a server of f.
func (f *Forest) Contains(id ServerID) bool { return f.nodes[id] != nil }

// Servers returns every server of f in ascending id order.
func (f *Forest) Servers() []ServerID {
	ids := make([]ServerID, 0, len(f.nodes))
	for id := range f.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Addr returns the address id joined with ("" if id is not a server of f).
func (f *Forest) Addr(id ServerID) string {
	if n := f.nodes[id]; n != nil {
		return n.addr
	}
	return ""
}

// Color returns the color (group) of id, and false if id is not a server of f.
func (f *Forest) Color(id ServerID) (Color, bool) {
	n := f.nodes[id]
	if n == nil {
		return 0, false
	}
	return n.color, true
}

// GroupSize returns the number of servers of color k.
func (f *Forest) GroupSize(k Color) int {
	if int(k) >= len(f.trees) {
		return 0
	}
	return len(f.trees[k].core)
}

// GroupSizes returns the size of every group, indexed by color.
func (f *Forest) GroupSizes() []int {
	sizes := make([]int, len(f.trees))
	for k := range f.trees {
		sizes[k] = len(f.trees[k].core)
	}
	return sizes
}

// Group returns the servers of color k in heap order: Group(k)[0] is the root
// of tree k (the group's coordinator) and Group(k)[i], i > 0, is a child of
// Group(k)[(i-1)/c] in tree k.
func (f *Forest) Group(k Color) []ServerID {
	if int(k) >= len(f.trees) {
		return nil
	}
	ids := make([]ServerID, len(f.trees[k].core))
	for i, n := range f.trees[k].core {
		ids[i] = n.id
	}
	return ids
}

// Root returns the root of tree k, and false if f is empty or k is not a
// color of f. The root has color k whenever group k is non-empty.
func (f *Forest) Root(k Color) (ServerID, bool) {
	if int(k) >= len(f.trees) || f.trees[k].root == nil {
		return None, false
	}
	return f.trees[k].root.id, true
}

// Roots returns the root of every tree, indexed by color (None for an empty
// forest).
func (f *Forest) Roots() []ServerID {
	roots := make([]ServerID, len(f.trees))
	for k := range f.trees {
		roots[k] = None
		if r := f.trees[k].root; r != nil {
			roots[k] = r.id
		}
	}
	return roots
}

// lookup returns the node of id if it exists and k is a color of f.
func (f *Forest) lookup(k Color, id ServerID) *node {
	if int(k) >= len(f.trees) {
		return nil
	}
	return f.nodes[id]
}

// Parent returns the parent of id in tree k, and false if id is the root or
// not a server of f.
func (f *Forest) Parent(k Color, id ServerID) (ServerID, bool) {
	n := f.lookup(k, id)
	if n == nil || n.links[k].parent == nil {
		return None, false
	}
	return n.links[k].parent.id, true
}

// Children returns the children of id in tree k in ascending id order.
func (f *Forest) Children(k Color, id ServerID) []ServerID {
	n := f.lookup(k, id)
	if n == nil {
		return nil
	}
	return sortedIDs(n.links[k].children)
}

// Descendants returns the number of servers below id in tree k.
func (f *Forest) Descendants(k Color, id ServerID) int {
	if n := f.lookup(k, id); n != nil {
		return n.links[k].desc
	}
	return 0
}

// Height returns the number of edges on the longest path from id down to a
// leaf of tree k (0 for a leaf).
func (f *Forest) Height(k Color, id ServerID) int {
	if n := f.lookup(k, id); n != nil {
		return n.links[k].height
	}
	return 0
}

// Depth returns the number of edges from the root of tree k to id.
func (f *Forest) Depth(k Color, id ServerID) int {
	if n := f.lookup(k, id); n != nil {
		return depth(k, n)
	}
	return 0
}

// TreeHeight returns the height of tree k (0 when it has at most one server).
func (f *Forest) TreeHeight(k Color) int {
	if int(k) >= len(f.trees) || f.trees[k].root == nil {
		return 0
	}
	return f.trees[k].root.links[k].height
}

// IsInterior reports whether id has children in tree k.
func (f *Forest) IsInterior(k Color, id ServerID) bool {
	n := f.lookup(k, id)
	return n != nil && n.interior&(1<<k) != 0
}

// InteriorTrees returns the colors of the trees in which id has children, in
// ascending order. While f is interior-node-disjoint it is empty or just
// id's own color.
func (f *Forest) InteriorTrees(id ServerID) []Color {
	n := f.nodes[id]
	if n == nil {
		return nil
	}
	var ks []Color
	for k := range f.trees {
		if n.interior&(1<<k) != 0 {
			ks = append(ks, Color(k))
		}
	}
	return ks
}

// Neighbors returns id's parents and children over all trees, without
// duplicates, in ascending id order: the servers it exchanges heartbeats
// with.
func (f *Forest) Neighbors(id ServerID) []ServerID {
	n := f.nodes[id]
	if n == nil {
		return nil
	}
	seen := make(map[ServerID]bool)
	var ids []ServerID
	add := func(m *node) {
		if m != nil && !seen[m.id] {
			seen[m.id] = true
			ids = append(ids, m.id)
		}
	}
	for k := range n.links {
		add(n.links[k].parent)
		for _, c := range n.links[k].children {
			add(c)
		}
	}
	slices.Sort(ids)
	return ids
}

// Clone returns a deep copy of f.
func (f *Forest) Clone() *Forest {
	g := &Forest{cfg: f.cfg, nodes: make(map[ServerID]*node, len(f.nodes)), trees: make([]tree, len(f.trees))}
	for id, n := range f.nodes {
		m := *n
		m.links = make([]link, len(n.links))
		g.nodes[id] = &m
	}
	conv := func(n *node) *node {
		if n == nil {
			return nil
		}
		return g.nodes[n.id]
	}
	for id, n := range f.nodes {
		m := g.nodes[id]
		for k, l := range n.links {
			m.links[k] = link{parent: conv(l.parent), desc: l.desc, height: l.height}
			if len(l.children) > 0 {
				m.links[k].children = make([]*node, len(l.children))
				for i, c := range l.children {
					m.links[k].children[i] = conv(c)
				}
			}
		}
	}
	for k, t := range f.trees {
		gt := &g.trees[k]
		gt.root = conv(t.root)
		gt.core = make([]*node, len(t.core))
		for i, n := range t.core {
			gt.core[i] = conv(n)
		}
		gt.room = t.room.clone()
		gt.hosts = make(map[ServerID]*node, len(t.hosts))
		for id := range t.hosts {
			gt.hosts[id] = g.nodes[id]
		}
	}
	return g
}

// String summarizes f for logs and test failures.
func (f *Forest) String() string {
	return fmt.Sprintf("forest %s: %d servers, groups %v, roots %v", f.cfg, len(f.nodes), f.GroupSizes(), f.Roots())
}

func sortedIDs(ns []*node) []ServerID {
	ids := make([]ServerID, len(ns))
	for i, n := range ns {
		ids[i] = n.id
	}
	slices.Sort(ids)
	return ids
}

// depth returns the number of edges between n and the top of its tree (or of
// the detached subtree it is in).
func depth(k Color, n *node) int {
	d := 0
	for p := n.links[k].parent; p != nil; p = p.links[k].parent {
		d++
	}
	return d
}
