package datatree

import (
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Walk calls fn for every node, parents before children and children by
// name (the order of a snapshot), with its path, data (shared with the
// tree, never to be modified), Stat and ACL (likewise), until fn returns
// false. It checks no permission: it is for tools that read a whole tree
// offline (a backup's dump), never for a client's read.
func (t *Tree) Walk(fn func(path string, data []byte, st zkproto.Stat, acl []zkproto.ACL) bool) {
	var walk func(path string, n *node) bool
	walk = func(path string, n *node) bool {
		if !fn(path, n.data, n.stat(), n.acl.list) {
			return false
		}
		names := n.childNames()
		prefix := path
		if path != rootPath {
			prefix += "/"
		}
		for _, name := range names {
			if !walk(prefix+name, n.children[name]) {
				return false
			}
		}
		return true
	}
	walk(rootPath, t.nodes[rootPath])
}
