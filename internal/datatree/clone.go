package datatree

import "strings"

// CloneSubtrees returns a copy of part of t: the subtrees rooted at roots
// (those that exist), the system subtree ("/zookeeper" and everything
// under it), the root node "/" with those of its children, and the whole
// session table. The copy shares nothing that an op changes with t, so it
// can be applied to while t is (node data and ACL lists, which no op
// modifies in place, are shared).
//
// Applying to the copy an entry whose ops touch only those subtrees' nodes
// below "/" (no create or delete of a child of "/", which changes "/"),
// session entries, namespace declarations and the reaper's deletes under
// the roots gives the result, the triggers and the changes to those
// subtrees and sessions that applying it to t gives, as long as every
// entry applied to t that touches them is applied to the copy too, in the
// same order. "/" itself is stale as soon as t creates or deletes one of
// its other children. Digest and NodeCount cover what the copy holds.
func (t *Tree) CloneSubtrees(roots []string) *Tree {
	c := newEmpty()
	c.lastZxid = t.lastZxid
	c.cloneNode(rootPath, nil, "", t.nodes[rootPath])
	for _, p := range append([]string{procPath}, roots...) {
		n := t.nodes[p]
		if n == nil || p == rootPath || c.nodes[p] != nil || strings.IndexByte(p[1:], '/') >= 0 {
			continue // absent, "/", twice, or not a child of "/"
		}
		c.cloneSubtree(p, c.nodes[rootPath], p[1:], n)
	}
	for name, s := range c.tops {
		s.lastZxid = t.tops[name].lastZxid
	}
	c.settle(0, false)
	for id, s := range t.sessions {
		cp := *s
		c.sessions[id] = &cp
		c.digest += cp.digest
	}
	return c
}

// cloneSubtree copies n, stored at path as child name of parent (a node of
// t), and everything under it into t.
func (t *Tree) cloneSubtree(path string, parent *node, name string, n *node) {
	cp := t.cloneNode(path, parent, name, n)
	for childName, child := range n.children {
		t.cloneSubtree(JoinPath(path, childName), cp, childName, child)
	}
}

// cloneNode adds to t a copy of n, without its children, at path as child
// name of parent (nil for the root), and returns it.
func (t *Tree) cloneNode(path string, parent *node, name string, n *node) *node {
	cp := &node{nodeState: n.nodeState}
	t.addNode(path, parent, name, cp, t.acls.acquire(n.acl.list))
	return cp
}

// JoinPath is the path of child name of parent.
func JoinPath(parent, name string) string {
	if parent == rootPath {
		return rootPath + name
	}
	return parent + "/" + name
}
