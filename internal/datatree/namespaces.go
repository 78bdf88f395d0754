package datatree

import (
	"bytes"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// A namespace declaration (txn.KindNamespaces) makes the tree hold a
// namespace table: every declared root is a persistent znode, and
// nsmap.ZnodePath, a world-readable node nobody can write, publishes the
// table. The declaration travels as an entry like any write, so every
// replica changes its tree at the same place in the log with the same
// zxid and time. Applying one twice changes nothing the second time.

// declareNamespaces applies a namespace declaration.
func (t *Tree) declareNamespaces(e *txn.Entry) (txn.Result, []Trigger) {
	tab, err := nsmap.Decode(e.Op.Data)
	if err != nil {
		return fail(zkproto.ErrBadArguments), nil
	}
	var trig []Trigger
	root := t.nodes[rootPath]
	for _, ns := range tab.Namespaces() {
		if n := t.nodes[ns.Root()]; n != nil {
			t.makePersistent(ns.Root(), n)
			continue
		}
		_, trig = t.createNode(e, ns.Root(), rootPath, root, []byte{}, zkproto.OpenACLUnsafe, 0, trig)
	}
	data := tab.Encode()
	n := t.nodes[nsmap.ZnodePath]
	switch {
	case n == nil && tab.Len() == 0:
		// Nothing declared, nothing ever published: the tree stays as it
		// would be without namespaces.
	case n == nil:
		_, trig = t.createNode(e, nsmap.ZnodePath, procPath, t.nodes[procPath], data, zkproto.ReadACLUnsafe, 0, trig)
	default:
		t.makePersistent(nsmap.ZnodePath, n)
		if !bytes.Equal(n.data, data) {
			trig = append(trig, t.changeData(nsmap.ZnodePath, n, data, e.Zxid, e.Time))
		}
		if !slices.Equal(n.acl.list, zkproto.ReadACLUnsafe) {
			next := t.acls.acquire(zkproto.ReadACLUnsafe)
			prev := n.acl
			t.beginChange(n)
			n.acl = next
			n.aversion++
			t.endChange(n)
			t.acls.release(prev)
		}
	}
	return txn.Result{}, trig
}

// makePersistent turns an ephemeral, container or TTL node into a
// persistent one, keeping its data, ACL and children: a declared root, or
// the published table, must not go with a session or a reaper.
func (t *Tree) makePersistent(path string, n *node) {
	if ownerKindOf(n.owner) == ownerNone {
		return
	}
	t.unindex(path, n.owner)
	t.beginChange(n)
	n.owner = 0
	t.endChange(n)
}

// Declares reports whether the tree holds namespace table tab, that is
// whether a declaration of tab would change nothing. For the empty table
// that means publishing no other table: a tree that never held one has no
// nsmap.ZnodePath, and a node a client created there is left alone unless
// it reads as a table.
func (t *Tree) Declares(tab nsmap.Table) bool {
	for _, ns := range tab.Namespaces() {
		n := t.nodes[ns.Root()]
		if n == nil || ownerKindOf(n.owner) != ownerNone {
			return false
		}
	}
	n := t.nodes[nsmap.ZnodePath]
	if tab.Len() == 0 {
		if n == nil {
			return true
		}
		published, err := nsmap.Decode(n.data)
		return err != nil || published.Len() == 0
	}
	return n != nil && ownerKindOf(n.owner) == ownerNone && bytes.Equal(n.data, tab.Encode()) &&
		slices.Equal(n.acl.list, zkproto.ReadACLUnsafe)
}
