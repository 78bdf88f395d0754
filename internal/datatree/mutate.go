package datatree

// The primitives below are the only code that changes the node table. Each
// keeps every index (children, ephemerals, containers, TTLs, ACL references,
// counters and the digest) in step, and, while a multi is being applied,
// records how to undo itself.

// undoKind says what an undoRecord reverses.
type undoKind uint8

const (
	undoState  undoKind = iota // restore a node's saved nodeState
	undoAdd                    // remove a node that was added
	undoRemove                 // put back a node that was removed
)

type undoRecord struct {
	kind   undoKind
	n      *node
	state  nodeState // undoState: the state to restore
	path   string    // undoAdd, undoRemove
	parent *node     // undoAdd, undoRemove
	name   string    // undoAdd, undoRemove
}

// addNode links n (whose nodeState is complete except acl) into the tree at
// path, as child name of parent (nil only for the root), with ACL set acl.
func (t *Tree) addNode(path string, parent *node, name string, n *node, acl *aclSet) {
	if t.snap != nil {
		if parent != nil {
			t.preserve(parent)
		}
		// A new node is not in the snapshot; one a rollback puts back
		// was preserved when it was removed.
		n.snapGen = t.snap.gen
	}
	n.acl = acl
	n.digest = nodeDigest(&n.nodeState)
	n.top = t.subtreeOf(path)
	n.top.digest += n.digest
	n.top.nodes++
	t.touch(n.top)
	t.nodes[path] = n
	if parent != nil {
		if parent.children == nil {
			parent.children = make(map[string]*node, 4)
		}
		parent.children[name] = n
	}
	t.index(path, n.owner)
	t.dataSize += int64(len(path) + len(n.data))
	t.digest += n.digest
	if t.logging {
		t.undo = append(t.undo, undoRecord{kind: undoAdd, n: n, path: path, parent: parent, name: name})
	}
}

// removeNode unlinks n, stored at path as child name of parent.
func (t *Tree) removeNode(path string, parent *node, name string, n *node) {
	t.preserve(parent)
	t.preserve(n)
	delete(t.nodes, path)
	delete(parent.children, name)
	if len(parent.children) == 0 {
		// Drop the empty map: most nodes are leaves, and a leaf's nil map
		// costs nothing.
		parent.children = nil
	}
	t.unindex(path, n.owner)
	t.acls.release(n.acl)
	t.dataSize -= int64(len(path) + len(n.data))
	t.digest -= n.digest
	n.top.digest -= n.digest
	n.top.nodes--
	t.touch(n.top)
	if t.logging {
		t.undo = append(t.undo, undoRecord{kind: undoRemove, n: n, path: path, parent: parent, name: name})
	}
}

// index records path in the set its owner puts it in.
func (t *Tree) index(path string, owner int64) {
	switch ownerKindOf(owner) {
	case ownerContainer:
		t.containers[path] = struct{}{}
	case ownerTTL:
		t.ttls[path] = struct{}{}
	case ownerSession:
		set := t.ephemerals[owner]
		if set == nil {
			set = make(map[string]struct{})
			t.ephemerals[owner] = set
		}
		set[path] = struct{}{}
		t.ephemeralCount++
	}
}

func (t *Tree) unindex(path string, owner int64) {
	switch ownerKindOf(owner) {
	case ownerContainer:
		delete(t.containers, path)
	case ownerTTL:
		delete(t.ttls, path)
	case ownerSession:
		if set := t.ephemerals[owner]; set != nil {
			if _, ok := set[path]; ok {
				delete(set, path)
				t.ephemeralCount--
			}
			if len(set) == 0 {
				delete(t.ephemerals, owner)
			}
		}
	}
}

// beginChange must be called before an op changes n's nodeState (never its
// acl: setACL is not allowed in a multi), and endChange after, so that the
// digest and data size follow and a multi can restore the old state.
func (t *Tree) beginChange(n *node) {
	t.preserve(n)
	if t.logging {
		t.undo = append(t.undo, undoRecord{kind: undoState, n: n, state: n.nodeState})
	}
	t.digest -= n.digest
	n.top.digest -= n.digest
	t.dataSize -= int64(len(n.data))
}

func (t *Tree) endChange(n *node) {
	n.digest = nodeDigest(&n.nodeState)
	t.digest += n.digest
	n.top.digest += n.digest
	t.touch(n.top)
	t.dataSize += int64(len(n.data))
}

// rollback undoes everything recorded in the undo log, newest first, and
// empties it.
func (t *Tree) rollback() {
	logging := t.logging
	t.logging = false
	for i := len(t.undo) - 1; i >= 0; i-- {
		u := &t.undo[i]
		switch u.kind {
		case undoState:
			t.digest -= u.n.digest
			u.n.top.digest -= u.n.digest
			t.dataSize -= int64(len(u.n.data))
			// Keep the current ACL set: the list cannot have changed in a
			// multi, but undoRemove may have re-acquired it as a new set.
			acl := u.n.acl
			u.n.nodeState = u.state
			u.n.acl = acl
			t.digest += u.n.digest
			u.n.top.digest += u.n.digest
			t.dataSize += int64(len(u.n.data))
		case undoAdd:
			t.removeNode(u.path, u.parent, u.name, u.n)
		case undoRemove:
			// The node's ACL set may have been forgotten when the node
			// went; acquire it again by value.
			t.addNode(u.path, u.parent, u.name, u.n, t.acls.acquire(u.n.acl.list))
		}
	}
	t.clearUndo()
	t.logging = logging
}

// clearUndo empties the undo log, dropping its references.
func (t *Tree) clearUndo() {
	clear(t.undo)
	t.undo = t.undo[:0]
}
