package forest

// Every edge of every tree changes only through attach, detach, setRoot and
// clearRoot below. They keep the per-server descendants, heights and
// interior masks, the per-tree room set and host set up to date, and record
// each server's parent before the first change of the current operation so
// that the operation can report exactly which parent edges it moved.

// moveKey names a server's place in one tree.
type moveKey struct {
	tree   Color
	server ServerID
}

// recorder remembers, for the operation in progress, each touched server's
// parent before the operation. It is reset by begin.
type recorder struct {
	orig  map[moveKey]ServerID
	order []moveKey
}

func (r *recorder) begin() {
	if r.orig == nil {
		r.orig = make(map[moveKey]ServerID)
	}
	clear(r.orig)
	r.order = r.order[:0]
}

func (f *Forest) note(k Color, n *node) {
	key := moveKey{k, n.id}
	if _, ok := f.rec.orig[key]; ok {
		return
	}
	p := None
	if n.links[k].parent != nil {
		p = n.links[k].parent.id
	}
	f.rec.orig[key] = p
	f.rec.order = append(f.rec.order, key)
}

// attach makes c, which has no parent and is not a root, a child of p in tree
// k.
func (f *Forest) attach(k Color, c, p *node) {
	f.note(k, c)
	c.links[k].parent = p
	p.links[k].children = append(p.links[k].children, c)
	f.childrenChanged(k, p)
	add := 1 + c.links[k].desc
	h := c.links[k].height + 1
	for a := p; a != nil; a = a.links[k].parent {
		l := &a.links[k]
		l.desc += add
		if h > l.height {
			l.height = h
		}
		h = l.height + 1
	}
}

// detach cuts c from its parent in tree k; c keeps its own subtree.
func (f *Forest) detach(k Color, c *node) {
	p := c.links[k].parent
	if p == nil {
		return
	}
	f.note(k, c)
	c.links[k].parent = nil
	kids := p.links[k].children
	for i, x := range kids {
		if x == c {
			kids[i] = kids[len(kids)-1]
			kids[len(kids)-1] = nil
			p.links[k].children = kids[:len(kids)-1]
			break
		}
	}
	f.childrenChanged(k, p)
	sub := 1 + c.links[k].desc
	// lost is the height the subtree below a used to contribute to a, or -1
	// once a level kept its height (then no height above can change).
	lost := c.links[k].height + 1
	for a := p; a != nil; a = a.links[k].parent {
		l := &a.links[k]
		l.desc -= sub
		if lost < 0 {
			continue
		}
		old := l.height
		if lost == old {
			l.height = recomputeHeight(k, a, old)
		}
		if l.height == old {
			lost = -1
		} else {
			lost = old + 1
		}
	}
}

// recomputeHeight returns a's height in tree k from its children, stopping
// early once a child still reaches the previous height old.
func recomputeHeight(k Color, a *node, old int) int {
	h := 0
	for _, c := range a.links[k].children {
		if ch := c.links[k].height + 1; ch > h {
			h = ch
			if h >= old {
				return h
			}
		}
	}
	return h
}

// setRoot makes n, which has no parent, the root of tree k.
func (f *Forest) setRoot(k Color, n *node) {
	f.note(k, n)
	f.trees[k].root = n
}

// clearRoot empties the root slot of tree k (its root is being removed).
func (f *Forest) clearRoot(k Color) {
	f.trees[k].root = nil
}

// childrenChanged updates what depends on the number of p's children in tree
// k: p's interior mask, the tree's room set when p is in its core, and the
// tree's host set when p is a foreign server.
func (f *Forest) childrenChanged(k Color, p *node) {
	bit := uint64(1) << k
	has := len(p.links[k].children) > 0
	if has {
		p.interior |= bit
	} else {
		p.interior &^= bit
	}
	if p.color == k {
		f.updateRoom(k, p)
		return
	}
	if has {
		f.trees[k].hosts[p.id] = p
	} else {
		delete(f.trees[k].hosts, p.id)
	}
}

// updateRoom records whether core server n of tree k has room for a child.
func (f *Forest) updateRoom(k Color, n *node) {
	t := &f.trees[k]
	if n.pos < len(t.core) && t.core[n.pos] == n {
		t.room.set(n.pos, len(n.links[k].children) < f.cfg.MaxChildren)
	}
}
