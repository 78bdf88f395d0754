package forest

import (
	"errors"
	"fmt"
	"math/bits"
)

// CheckInvariants verifies f from scratch (it does not trust any of the
// incrementally kept counters) and returns the first violation found, or
// nil. The invariants, for an n-server forest of shape t-c:
//
//  1. Every server appears in every tree exactly once, and every tree is
//     connected and acyclic: each server but the root has one parent, which
//     lists it once among its children, and the root reaches all n servers.
//  2. No server has more than c children in any tree.
//  3. Colors are in [0,t) and group sizes differ by at most one.
//  4. The root of tree k has color k whenever group k is non-empty.
//  5. The servers of color k form the top of tree k as a c-ary heap: the
//     i-th of Group(k) (i > 0) is a child of the ((i-1)/c)-th.
//  6. Interior-node disjointness: when Config.Disjoint(n), a server has
//     children only in the tree of its own color. Otherwise, in a tree
//     whose group is non-empty, a foreign server has children only if
//     every server of the tree's color has c children, and exactly
//     Config.Overflow(n, g_k) servers hang below foreign servers.
//  7. When n >= t and t <= c: each tree has at most one foreign server with
//     children, and each server has children in at most two trees.
//  8. Tree k is no higher than Config.HeightBound(n, g_k).
//  9. The kept descendants, heights, interior masks, room and host sets
//     match a recomputation.
func (f *Forest) CheckInvariants() error {
	cfg := f.cfg
	if err := cfg.Validate(); err != nil {
		return err
	}
	if len(f.trees) != cfg.Trees {
		return fmt.Errorf("forest: %d trees, config says %d", len(f.trees), cfg.Trees)
	}
	n := len(f.nodes)
	count := make([]int, cfg.Trees)
	for id, x := range f.nodes {
		if x == nil || x.id != id {
			return fmt.Errorf("forest: server table entry %d is inconsistent", id)
		}
		if id == None {
			return errors.New("forest: reserved id None is a server")
		}
		if int(x.color) >= cfg.Trees {
			return fmt.Errorf("forest: server %d has color %d, only %d trees", id, x.color, cfg.Trees)
		}
		if len(x.links) != cfg.Trees {
			return fmt.Errorf("forest: server %d has %d tree links, want %d", id, len(x.links), cfg.Trees)
		}
		if len(x.addr) > MaxAddrLen {
			return fmt.Errorf("forest: server %d address longer than %d", id, MaxAddrLen)
		}
		count[x.color]++
	}
	lo, hi := n, 0
	for _, c := range count {
		lo, hi = min(lo, c), max(hi, c)
	}
	if n > 0 && hi-lo > 1 {
		return fmt.Errorf("forest: group sizes %v differ by more than one", count)
	}
	// Scratch space indexed by a dense numbering of the servers, so that the
	// per-tree walks below need no maps.
	index := make(map[*node]int32, n)
	all := make([]*node, 0, n)
	for _, x := range f.nodes {
		index[x] = int32(len(index))
		all = append(all, x)
	}
	sc := &scratch{index: index, all: all, interior: make([]uint64, n), depth: make([]int32, n),
		desc: make([]int32, n), height: make([]int32, n), order: make([]*node, 0, n)}
	for k := range f.trees {
		if err := f.checkTree(Color(k), count[k], sc); err != nil {
			return err
		}
	}
	for id, x := range f.nodes {
		got := sc.interior[index[x]]
		if x.interior != got {
			return fmt.Errorf("forest: server %d interior mask %b, recomputed %b", id, x.interior, got)
		}
		if n >= cfg.Trees && cfg.Trees <= cfg.MaxChildren {
			if roles := bits.OnesCount64(got); roles > 2 {
				return fmt.Errorf("forest: server %d is interior in %d trees (at most 2 when n >= t and t <= c)", id, roles)
			}
		}
	}
	return nil
}

// scratch is the working memory of CheckInvariants.
type scratch struct {
	index               map[*node]int32
	all                 []*node // every server, in index order
	interior            []uint64
	depth, desc, height []int32
	order               []*node
}

// checkTree verifies tree k, whose group has g servers, and adds each
// server's "has children in k" bit to sc.interior.
func (f *Forest) checkTree(k Color, g int, sc *scratch) error {
	cfg, t, n := f.cfg, &f.trees[k], len(f.nodes)
	c := cfg.MaxChildren
	if len(t.core) != g {
		return fmt.Errorf("forest: tree %d: core holds %d servers, group has %d", k, len(t.core), g)
	}
	for i, x := range t.core {
		if x == nil || f.nodes[x.id] != x || x.color != k || x.pos != i {
			return fmt.Errorf("forest: tree %d: core position %d is inconsistent", k, i)
		}
		if i > 0 && x.links[k].parent != t.core[(i-1)/c] {
			return fmt.Errorf("forest: tree %d: core server %d at position %d is not a child of position %d", k, x.id, i, (i-1)/c)
		}
	}
	if n == 0 {
		if t.root != nil {
			return fmt.Errorf("forest: tree %d: empty forest has a root", k)
		}
		return nil
	}
	if t.root == nil || f.nodes[t.root.id] != t.root {
		return fmt.Errorf("forest: tree %d: no root among the servers", k)
	}
	if g > 0 && t.root != t.core[0] {
		return fmt.Errorf("forest: tree %d: root %d does not have color %d", k, t.root.id, k)
	}
	for _, x := range sc.all {
		id, l := x.id, x.links[k]
		if (l.parent == nil) != (x == t.root) {
			return fmt.Errorf("forest: tree %d: server %d: has parent %v, is root %v", k, id, l.parent != nil, x == t.root)
		}
		if l.parent != nil {
			if f.nodes[l.parent.id] != l.parent {
				return fmt.Errorf("forest: tree %d: parent of %d is not a server", k, id)
			}
			seen := 0
			for _, s := range l.parent.links[k].children {
				if s == x {
					seen++
				}
			}
			if seen != 1 {
				return fmt.Errorf("forest: tree %d: server %d listed %d times by its parent %d", k, id, seen, l.parent.id)
			}
		}
		if len(l.children) > c {
			return fmt.Errorf("forest: tree %d: server %d has %d children, limit %d", k, id, len(l.children), c)
		}
		for _, ch := range l.children {
			if ch == nil || ch.links[k].parent != x {
				return fmt.Errorf("forest: tree %d: a child of %d does not name it as parent", k, id)
			}
		}
	}

	// Walk from the root, recomputing depth, descendants and height; every
	// server must be reached exactly once.
	for i := range sc.depth {
		sc.depth[i] = -1
	}
	order := append(sc.order[:0], t.root)
	sc.depth[sc.index[t.root]] = 0
	for i := 0; i < len(order); i++ {
		x := order[i]
		d := sc.depth[sc.index[x]]
		for _, ch := range x.links[k].children {
			ci, ok := sc.index[ch]
			if !ok || f.nodes[ch.id] != ch {
				return fmt.Errorf("forest: tree %d: a child of %d is not a server", k, x.id)
			}
			if sc.depth[ci] >= 0 {
				return fmt.Errorf("forest: tree %d: server %d reached twice", k, ch.id)
			}
			sc.depth[ci] = d + 1
			order = append(order, ch)
		}
	}
	sc.order = order
	if len(order) != n {
		return fmt.Errorf("forest: tree %d: root reaches %d of %d servers", k, len(order), n)
	}
	for i := len(order) - 1; i >= 0; i-- {
		x := order[i]
		var desc, height int32
		for _, ch := range x.links[k].children {
			ci := sc.index[ch]
			desc += 1 + sc.desc[ci]
			height = max(height, sc.height[ci]+1)
		}
		xi := sc.index[x]
		sc.desc[xi], sc.height[xi] = desc, height
		if l := x.links[k]; l.desc != int(desc) || l.height != int(height) {
			return fmt.Errorf("forest: tree %d: server %d keeps desc %d height %d, recomputed %d %d", k, x.id, l.desc, l.height, desc, height)
		}
	}

	// Interior servers, room and hosts.
	hosts, overflow, coreFull := 0, 0, true
	for _, x := range sc.all {
		id, kids := x.id, len(x.links[k].children)
		if kids > 0 {
			sc.interior[sc.index[x]] |= 1 << k
		}
		if x.color == k {
			if t.room.has(x.pos) != (kids < c) {
				return fmt.Errorf("forest: tree %d: room set wrong for core server %d", k, id)
			}
			coreFull = coreFull && kids == c
		} else {
			if (t.hosts[id] != nil) != (kids > 0) || (t.hosts[id] != nil && t.hosts[id] != x) {
				return fmt.Errorf("forest: tree %d: host set wrong for server %d", k, id)
			}
			if kids > 0 {
				hosts++
				overflow += kids
			}
		}
	}
	if len(t.hosts) != hosts {
		return fmt.Errorf("forest: tree %d: host set has %d entries, %d foreign servers have children", k, len(t.hosts), hosts)
	}
	for p := len(t.core); p < 64*len(t.room.words); p++ {
		if t.room.has(p) {
			return fmt.Errorf("forest: tree %d: room set names position %d beyond the core", k, p)
		}
	}
	if cfg.Disjoint(n) && hosts > 0 {
		return fmt.Errorf("forest: tree %d: %d foreign servers have children although %d servers fit %s disjointly", k, hosts, n, cfg)
	}
	if g > 0 {
		if hosts > 0 && !coreFull {
			return fmt.Errorf("forest: tree %d: a foreign server has children while a server of color %d has room", k, k)
		}
		if want := cfg.Overflow(n, g); overflow != want {
			return fmt.Errorf("forest: tree %d: %d servers hang below foreign servers, want %d", k, overflow, want)
		}
	}
	if n >= cfg.Trees && cfg.Trees <= c && hosts > 1 {
		return fmt.Errorf("forest: tree %d: %d foreign interior servers (at most 1 when n >= t and t <= c)", k, hosts)
	}
	if h, bound := t.root.links[k].height, cfg.HeightBound(n, g); h > bound {
		return fmt.Errorf("forest: tree %d: height %d exceeds bound %d (n=%d, g=%d)", k, h, bound, n, g)
	}
	return nil
}
