package forest

import (
	"fmt"
	"math/bits"
)

// Join adds server id with address addr to every tree (the paper's
// INSERT_INTO_TREE performed on each tree) and returns what changed. The
// server gets the color of the smallest group, the lowest such color on a
// tie, which keeps the groups within one of each other; that is the group
// a server joining an ensemble votes in. It fails, leaving f unchanged, if
// id is None or already a server of f, or addr is longer than MaxAddrLen.
func (f *Forest) Join(id ServerID, addr string) (Update, error) {
	if id == None {
		return Update{}, fmt.Errorf("forest: join: server id %d is reserved", uint32(None))
	}
	if f.nodes[id] != nil {
		return Update{}, fmt.Errorf("forest: join: server %d is already a member", id)
	}
	if len(addr) > MaxAddrLen {
		return Update{}, fmt.Errorf("forest: join: address of server %d is %d bytes, limit %d", id, len(addr), MaxAddrLen)
	}
	roots := f.Roots()
	f.rec.begin()
	k := f.smallestGroup()
	n := &node{id: id, addr: addr, color: k, links: make([]link, f.cfg.Trees)}
	f.nodes[id] = n
	for m := range f.trees {
		if Color(m) == k {
			f.insertCore(k, n)
		} else {
			f.placeForeign(Color(m), n)
		}
	}
	f.normalizeAll()
	return f.finish(Update{Change: Change{Op: OpJoin, Server: id, Addr: addr}, Color: k}, id, roots), nil
}

// smallestGroup returns the lowest color among the smallest groups.
func (f *Forest) smallestGroup() Color {
	best := 0
	for k := range f.trees {
		if len(f.trees[k].core) < len(f.trees[best].core) {
			best = k
		}
	}
	return Color(best)
}

// insertCore adds x, a server of color k without a place in tree k, to the
// core of tree k at the next heap position.
//
// This is Algorithm 1 with its choices made explicit. Line 3 (the tree has no
// server of its color yet): x becomes the root and the old root its child.
// Lines 12-19 (descend to an unsaturated server of the tree's color, into the
// shallowest subtree): the next heap position is the shallowest free place in
// the core, and its parent is fixed by the heap. If that parent is full of
// foreign children, x takes the place of one of them (the one with the fewest
// descendants, then the lowest id), which is then placed again like any
// foreign server: the reading of line 17's "does not belong to the color
// set" that keeps foreign servers leaves.
func (f *Forest) insertCore(k Color, x *node) {
	t := &f.trees[k]
	x.pos = len(t.core)
	t.core = append(t.core, x)
	defer f.updateRoom(k, x)
	if x.pos == 0 {
		old := t.root
		f.clearRoot(k)
		f.setRoot(k, x)
		if old != nil {
			f.attach(k, old, x)
		}
		return
	}
	p := t.core[(x.pos-1)/f.cfg.MaxChildren]
	if len(p.links[k].children) < f.cfg.MaxChildren {
		f.attach(k, x, p)
		return
	}
	var victim *node
	for _, c := range p.links[k].children {
		if c.color == k {
			continue
		}
		if victim == nil || c.links[k].desc < victim.links[k].desc ||
			c.links[k].desc == victim.links[k].desc && c.id < victim.id {
			victim = c
		}
	}
	// p has fewer than c core children (x's heap slot is among them and
	// still empty), so a full p has a foreign child.
	f.detach(k, victim)
	f.attach(k, x, p)
	f.placeForeign(k, victim)
}

// placeForeign hangs n, a server without a place in tree k whose color is
// not k (possibly with a subtree of its own), in tree k: below the
// shallowest server of color k that has room (principles 1 and 2 of
// Algorithm 1; the heap makes "shallowest" the lowest position), and only if
// every server of color k is full, below a foreign host (see pickHost).
func (f *Forest) placeForeign(k Color, n *node) {
	t := &f.trees[k]
	if pos := t.room.first(); pos >= 0 {
		f.attach(k, n, t.core[pos])
		return
	}
	if t.root == nil {
		f.setRoot(k, n)
		return
	}
	f.attach(k, n, f.pickHost(k))
}

// pickHost chooses the foreign server of tree k that takes an overflow child
// when no server of color k has room. The choice depends on the shape:
//
//   - t <= c: a server that is already a host in tree k and has room comes
//     first (a tree keeps as few foreign interior servers as it can); else
//     the key, smallest first, is the number of other foreign trees the
//     server is already interior in, then its depth, then its id. Overflow
//     is then below c per tree, one host suffices, and a server with no
//     foreign role always exists at depth <= CoreDepth+1, so every server
//     stays interior in at most two trees (resilience to floor((t-1)/2)
//     crashes beyond disjointness) and the height grows by at most one.
//   - t > c: the key is depth, then foreign roles, then id, over all
//     servers. Most servers overflow and most must be interior somewhere
//     foreign; filling hosts breadth-first keeps the tree logarithmic, which
//     preferring existing hosts or the roles key would not (both chain hosts
//     below hosts).
//
// Servers in a subtree that is being re-placed are not candidates. Tree k
// must be non-empty.
func (f *Forest) pickHost(k Color) *node {
	rolesFirst := f.cfg.Trees <= f.cfg.MaxChildren
	var best *node
	var bestKey [3]int
	consider := func(n *node) {
		if len(n.links[k].children) >= f.cfg.MaxChildren || !f.attached(k, n) {
			return
		}
		key := [3]int{f.rolesElsewhere(k, n), depth(k, n), int(n.id)}
		if !rolesFirst {
			key[0], key[1] = key[1], key[0]
		}
		if best == nil || lessKey(key, bestKey) {
			best, bestKey = n, key
		}
	}
	if rolesFirst {
		for _, h := range f.trees[k].hosts {
			consider(h)
		}
		if best != nil {
			return best
		}
	}
	for _, n := range f.nodes {
		consider(n)
	}
	return best
}

// rolesElsewhere counts the trees other than k and n's own in which n has
// children.
func (f *Forest) rolesElsewhere(k Color, n *node) int {
	return bits.OnesCount64(n.interior &^ (1 << n.color) &^ (1 << k))
}

// attached reports whether n hangs from the root of tree k (and not from a
// subtree that an operation has cut off and is about to place again).
func (f *Forest) attached(k Color, n *node) bool {
	for n.links[k].parent != nil {
		n = n.links[k].parent
	}
	return n == f.trees[k].root
}

func lessKey(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}
