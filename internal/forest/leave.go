package forest

import (
	"cmp"
	"fmt"
	"slices"
)

// Leave removes server id from every tree (the paper's REMOVE_FROM_TREE
// performed on each tree) and returns what changed. If the departure would
// leave the groups more than one apart, one server moves from the largest
// group into the departed server's place (see donor). It fails, leaving f
// unchanged, if id is not a server of f.
func (f *Forest) Leave(id ServerID) (Update, error) {
	r := f.nodes[id]
	if r == nil {
		return Update{}, fmt.Errorf("forest: leave: server %d is not a member", id)
	}
	roots := f.Roots()
	f.rec.begin()
	k := r.color
	u := Update{Change: Change{Op: OpLeave, Server: id}, Color: k}
	s, from := f.donor(k)
	if s != nil {
		// s leaves the core of its group first (it is the last of the
		// heap, so nothing else there moves up), then changes color and
		// takes r's place in tree k.
		f.removeFrom(from, s, nil)
		s.color = k
		delete(f.trees[k].hosts, s.id)
		u.Recolors = append(u.Recolors, Recolor{Server: s.id, From: from, To: k})
	}
	for m := range f.trees {
		repl := (*node)(nil)
		if Color(m) == k {
			repl = s
		}
		f.removeFrom(Color(m), r, repl)
	}
	delete(f.nodes, id)
	if s != nil {
		f.placeForeign(from, s)
	}
	f.normalizeAll()
	return f.finish(u, id, roots), nil
}

// donor returns the server that must change group when a server of color k
// departs, and its current color, or nil if the groups stay within one of
// each other. The paper assigns colors only at registration and does not
// say what departures do to the balance; without this step, departures from
// one group would starve it. The donor is the last server in the core heap
// of the largest group (lowest color on a tie): removing the last heap
// position moves nothing else in that tree. It then takes the departed
// server's heap position in tree k directly, so tree k's core keeps its
// shape without the last-position shuffle a plain removal does.
func (f *Forest) donor(k Color) (*node, Color) {
	size := len(f.trees[k].core)
	large := 0
	for m := range f.trees {
		if len(f.trees[m].core) > len(f.trees[large].core) {
			large = m
		}
	}
	if len(f.trees[large].core)-(size-1) <= 1 {
		return nil, 0
	}
	core := f.trees[large].core
	return core[len(core)-1], Color(large)
}

// removeFrom takes r out of tree k and gives every server it leaves behind a
// place again. When r has color k, repl (a server of color k that is not yet
// in the core, or nil) takes r's heap position.
//
// This is Algorithm 2 with its choices made explicit. When r has color k, its
// place is taken by repl or else by the server at the last position of the
// core heap, which has no children of color k. (POP_ROOT returns a server
// from below to replace the departed one; the paper's choice, "the child with
// the most height or descendants", may be a foreign leaf, which would make a
// foreign server interior, and lets the core drift out of balance; the last
// heap position keeps the core a complete heap.) The replacement inherits r's
// children of color k, keeps as many of its own (foreign) children as still
// fit, and r's foreign children and the excess are placed again like any
// foreign server. When a foreign root leaves a tree whose group is empty, the
// orphan with the greatest height, then the most descendants, then the lowest
// id becomes the root (the paper's POP_ROOT rule, which is safe there because
// no server of color k exists).
func (f *Forest) removeFrom(k Color, r, repl *node) {
	t := &f.trees[k]
	orphans := slices.Clone(r.links[k].children)
	for _, o := range orphans {
		f.detach(k, o)
	}
	parent := r.links[k].parent
	wasRoot := t.root == r
	if wasRoot {
		f.clearRoot(k)
	} else {
		f.detach(k, r)
	}

	if r.color == k {
		i := r.pos
		l := repl
		if l == nil {
			last := len(t.core) - 1
			l = t.core[last]
			t.core[last] = nil
			t.core = t.core[:last]
			t.room.set(last, false)
		}
		if l != r {
			t.core[i] = l
			l.pos = i
			if idx := slices.Index(orphans, l); idx >= 0 {
				orphans = slices.Delete(orphans, idx, idx+1)
			} else if l.links[k].parent != nil {
				f.detach(k, l)
			} else if t.root == l {
				// Only a replacement can be the root here: a foreign
				// root of a tree whose group was empty is impossible
				// while r, of color k, is in it.
				f.clearRoot(k)
			}
			if wasRoot {
				f.setRoot(k, l)
			} else {
				f.attach(k, l, parent)
			}
			var foreign []*node
			for _, o := range orphans {
				if o.color == k {
					f.attach(k, o, l)
				} else {
					foreign = append(foreign, o)
				}
			}
			if excess := len(l.links[k].children) - f.cfg.MaxChildren; excess > 0 {
				own := slices.Clone(l.links[k].children)
				slices.SortFunc(own, func(a, b *node) int {
					return cmp.Or(b2i(a.color == k)-b2i(b.color == k),
						cmp.Compare(a.links[k].desc, b.links[k].desc), cmp.Compare(a.id, b.id))
				})
				for _, o := range own[:excess] {
					f.detach(k, o)
					foreign = append(foreign, o)
				}
			}
			f.updateRoom(k, l)
			orphans = foreign
		}
	}

	if t.root == nil && len(orphans) > 0 {
		best := 0
		for i, o := range orphans {
			a, b := o.links[k], orphans[best].links[k]
			if c := cmp.Or(cmp.Compare(b.height, a.height), cmp.Compare(b.desc, a.desc), cmp.Compare(o.id, orphans[best].id)); c < 0 {
				best = i
			}
		}
		f.setRoot(k, orphans[best])
		orphans = slices.Delete(orphans, best, best+1)
	}
	slices.SortFunc(orphans, func(a, b *node) int { return cmp.Compare(a.id, b.id) })
	for _, o := range orphans {
		f.placeForeign(k, o)
	}
}

// normalizeAll restores, in every tree, the rule that a foreign server has
// children only while every server of the tree's color is full.
func (f *Forest) normalizeAll() {
	for k := range f.trees {
		f.normalize(Color(k))
		f.consolidate(Color(k))
	}
}

// normalize moves overflow servers (children of foreign servers) of tree k
// into free places below servers of color k, deepest first, until one or the
// other runs out. Each move is one edge, and an operation frees at most a
// few places, so this stays within the per-operation edge bound.
func (f *Forest) normalize(k Color) {
	t := &f.trees[k]
	for len(t.hosts) > 0 {
		pos := t.room.first()
		if pos < 0 {
			return
		}
		var leaf *node
		leafDepth := -1
		for _, h := range t.hosts {
			for _, c := range h.links[k].children {
				if len(c.links[k].children) > 0 {
					continue
				}
				d := depth(k, c)
				if d > leafDepth || d == leafDepth && c.id < leaf.id {
					leaf, leafDepth = c, d
				}
			}
		}
		// Among the children of hosts, the deepest have no children of
		// their own, so leaf is never nil here.
		f.detach(k, leaf)
		f.attach(k, leaf, t.core[pos])
	}
}

// consolidate gathers the overflow servers of tree k below a single host when
// they fit there, so that a tree keeps at most one foreign interior server.
// An operation can overflow a tree by more than it finally needs (a
// departure re-places orphans before the rebalancing server joins the core
// and normalize takes some of them back), leaving the rest spread over
// several hosts. The host kept is the shallowest (then the one with the most
// children, then the lowest id), which is never itself below another host;
// the others give up their leaves, deepest first, until they are leaves.
func (f *Forest) consolidate(k Color) {
	t := &f.trees[k]
	if len(t.core) == 0 || len(t.hosts) < 2 {
		return
	}
	total := 0
	var keep *node
	keepDepth := 0
	for _, h := range t.hosts {
		total += len(h.links[k].children)
		d := depth(k, h)
		if keep == nil || cmp.Or(cmp.Compare(d, keepDepth),
			cmp.Compare(len(keep.links[k].children), len(h.links[k].children)),
			cmp.Compare(h.id, keep.id)) < 0 {
			keep, keepDepth = h, d
		}
	}
	if total > f.cfg.MaxChildren {
		return
	}
	for len(t.hosts) > 1 {
		var leaf *node
		leafDepth := -1
		for _, h := range t.hosts {
			if h == keep {
				continue
			}
			for _, c := range h.links[k].children {
				if len(c.links[k].children) > 0 {
					continue
				}
				d := depth(k, c)
				if d > leafDepth || d == leafDepth && c.id < leaf.id {
					leaf, leafDepth = c, d
				}
			}
		}
		// Every host other than keep has a descendant leaf, and the
		// deepest of those is a child of a host other than keep (keep is
		// the shallowest host, so nothing hangs below a host through it).
		f.detach(k, leaf)
		f.attach(k, leaf, keep)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
