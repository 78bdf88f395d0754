package datatree

import "github.com/giraffe-coord/giraffe/zkproto"

// Stat returns a node's Stat without any permission check, for the
// server's own decisions (re-arming watches on reconnect, as
// DataTree.setWatches does), never for a client's read.
func (t *Tree) Stat(path string) (zkproto.Stat, bool) {
	n := t.nodes[path]
	if n == nil {
		return zkproto.Stat{}, false
	}
	return n.stat(), true
}
