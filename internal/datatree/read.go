package datatree

import (
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The read ops check permissions as FinalRequestProcessor does: the node must
// exist (NONODE) and the caller holding ids must have READ on it (NOAUTH);
// getACL accepts READ or ADMIN.

// GetData returns a node's data and Stat. The data is shared with the tree
// and must not be modified; it is nil when the node was created with null
// data, which a reply encodes as a null buffer, as ZooKeeper does.
func (t *Tree) GetData(path string, ids []zkproto.Id) ([]byte, zkproto.Stat, zkproto.Code) {
	n := t.nodes[path]
	if n == nil {
		return nil, zkproto.Stat{}, zkproto.ErrNoNode
	}
	if !acl.Check(n.acl.list, zkproto.PermRead, ids) {
		return nil, zkproto.Stat{}, zkproto.ErrNoAuth
	}
	return n.data, n.stat(), zkproto.OK
}

// Exists returns a node's Stat. As in ZooKeeper 3.9, a path with a NUL is a
// bad argument, a missing node is NONODE (the server still arms an exists
// watch), and an existing node needs READ.
func (t *Tree) Exists(path string, ids []zkproto.Id) (zkproto.Stat, zkproto.Code) {
	if strings.IndexByte(path, 0) >= 0 {
		return zkproto.Stat{}, zkproto.ErrBadArguments
	}
	n := t.nodes[path]
	if n == nil {
		return zkproto.Stat{}, zkproto.ErrNoNode
	}
	if !acl.Check(n.acl.list, zkproto.PermRead, ids) {
		return zkproto.Stat{}, zkproto.ErrNoAuth
	}
	return n.stat(), zkproto.OK
}

// Children returns the names of a node's children, sorted, and its Stat
// (getChildren2). ZooKeeper returns them in hash order, which no client may
// rely on; sorting makes replies reproducible.
func (t *Tree) Children(path string, ids []zkproto.Id) ([]string, zkproto.Stat, zkproto.Code) {
	n := t.nodes[path]
	if n == nil {
		return nil, zkproto.Stat{}, zkproto.ErrNoNode
	}
	if !acl.Check(n.acl.list, zkproto.PermRead, ids) {
		return nil, zkproto.Stat{}, zkproto.ErrNoAuth
	}
	return n.childNames(), n.stat(), zkproto.OK
}

// childNames returns the names of n's children, sorted: the order
// getChildren answers in and snapshots and walks visit them in.
func (n *node) childNames() []string {
	names := make([]string, 0, len(n.children))
	for name := range n.children {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// GetACL returns a copy of a node's ACL list and its Stat. It needs READ or
// ADMIN; a caller without ADMIN sees every digest id with its password hash
// replaced by "x" ("user:x"), as ZooKeeper 3.9 masks them.
func (t *Tree) GetACL(path string, ids []zkproto.Id) ([]zkproto.ACL, zkproto.Stat, zkproto.Code) {
	n := t.nodes[path]
	if n == nil {
		return nil, zkproto.Stat{}, zkproto.ErrNoNode
	}
	if !acl.Check(n.acl.list, zkproto.PermRead|zkproto.PermAdmin, ids) {
		return nil, zkproto.Stat{}, zkproto.ErrNoAuth
	}
	out := slices.Clone(n.acl.list)
	if !acl.Check(n.acl.list, zkproto.PermAdmin, ids) {
		for i := range out {
			if out[i].ID.Scheme == "digest" {
				out[i].ID.ID = maskDigest(out[i].ID.ID)
			}
		}
	}
	return out, n.stat(), zkproto.OK
}

// maskDigest is id.replaceAll(":.*", ":x"): everything from the first ':'
// becomes ":x". ('.' does not match a line terminator in Java, so a hash
// containing one keeps what follows it; no valid digest id has one.)
func maskDigest(id string) string {
	i := strings.IndexByte(id, ':')
	if i < 0 {
		return id
	}
	rest := id[i+1:]
	if j := strings.IndexAny(rest, "\n\r\u0085\u2028\u2029"); j >= 0 {
		return id[:i] + ":x" + maskDigest(rest[j:])
	}
	return id[:i] + ":x"
}

// AllChildrenNumber returns the number of descendants of a node (all
// generations, the node itself excluded), as getAllChildrenNumber.
func (t *Tree) AllChildrenNumber(path string, ids []zkproto.Id) (int32, zkproto.Code) {
	n := t.nodes[path]
	if n == nil {
		return 0, zkproto.ErrNoNode
	}
	if !acl.Check(n.acl.list, zkproto.PermRead, ids) {
		return 0, zkproto.ErrNoAuth
	}
	if path == rootPath {
		return int32(len(t.nodes) - 1), zkproto.OK
	}
	return int32(countDescendants(n)), zkproto.OK
}

func countDescendants(n *node) int {
	c := len(n.children)
	for _, ch := range n.children {
		if ch.children != nil {
			c += countDescendants(ch)
		}
	}
	return c
}
