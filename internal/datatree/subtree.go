package datatree

import "strings"

// The tree keeps, for every top-level znode, the digest, node count and
// last changing zxid of the subtree it roots (a namespace's root and
// everything under it, and the same for "/zookeeper" and every other
// top-level name), and the same for "/" alone. A subtree's digest is the
// sum of its nodes' hashes, the very hashes the tree digest adds up, so
// replicas that applied the same entries have equal subtree digests, and
// the tree digest stays what it is: the sum of every node's and every
// session's hash.
//
// A subtree's last zxid is that of the last applied entry that changed
// one of its nodes (an entry that changes nothing, such as a failed
// multi, does not count). A tree read from a snapshot cannot know it for
// changes older than the snapshot, so every subtree it holds starts at the
// snapshot's zxid, an upper bound. Both make the same promise: the
// subtree is what applying every entry up to its last zxid makes it, so
// two replicas that report equal last zxids for a subtree must report
// equal digests.

// subtree is the running account of one top-level subtree.
type subtree struct {
	name     string // top-level name; "" for "/" alone
	digest   uint64
	nodes    int
	lastZxid int64
}

// SubtreeInfo describes one top-level subtree: the root "/NAME" and every
// node under it, or, for Name "", the node "/" alone.
type SubtreeInfo struct {
	Name     string // top-level name; "" for "/"
	Digest   uint64 // sum of the subtree's node hashes
	Nodes    int    // znodes in the subtree
	LastZxid int64  // last entry that changed the subtree (see above)
}

// topName returns the top-level name path is under: "a" for "/a/b/c", ""
// for "/".
func topName(path string) string {
	name := path[1:]
	if i := strings.IndexByte(name, '/'); i >= 0 {
		name = name[:i]
	}
	return name
}

// subtreeOf returns the account of the subtree path belongs to, making it
// if it is the first node there.
func (t *Tree) subtreeOf(path string) *subtree {
	name := topName(path)
	s := t.tops[name]
	if s == nil {
		s = &subtree{name: name}
		t.tops[name] = s
	}
	return s
}

// touch records that the entry being applied changed subtree s.
func (t *Tree) touch(s *subtree) {
	if n := len(t.touched); n == 0 || t.touched[n-1] != s {
		t.touched = append(t.touched, s)
	}
}

// settle ends the accounting of one entry at zxid: the subtrees it
// touched take zxid as their last zxid if it changed the tree (not when
// a multi was rolled back), and subtrees left without nodes are dropped.
func (t *Tree) settle(zxid int64, changed bool) {
	for _, s := range t.touched {
		if s.nodes == 0 {
			if t.tops[s.name] == s {
				delete(t.tops, s.name)
			}
			continue
		}
		if changed {
			s.lastZxid = zxid
		}
	}
	clear(t.touched)
	t.touched = t.touched[:0]
}

// Subtree returns the account of the subtree of top-level name ("" for
// "/" alone), and whether it exists.
func (t *Tree) Subtree(name string) (SubtreeInfo, bool) {
	s := t.tops[name]
	if s == nil {
		return SubtreeInfo{Name: name}, false
	}
	return s.info(), true
}

// Subtrees returns the account of every top-level subtree and of "/", in
// no particular order.
func (t *Tree) Subtrees() []SubtreeInfo {
	out := make([]SubtreeInfo, 0, len(t.tops))
	for _, s := range t.tops {
		out = append(out, s.info())
	}
	return out
}

func (s *subtree) info() SubtreeInfo {
	return SubtreeInfo{Name: s.name, Digest: s.digest, Nodes: s.nodes, LastZxid: s.lastZxid}
}
