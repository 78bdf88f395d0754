package datatree

import (
	"strings"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The single-node write ops. Each checks its preconditions in the order
// PrepRequestProcessor does, so that the first failing check decides the
// error code, and changes nothing unless all pass.

func fail(c zkproto.Code) txn.Result { return txn.Result{Err: c} }

// applyOp applies one create, delete, setData, setACL or check, appending
// its triggers to trig.
func (t *Tree) applyOp(e *txn.Entry, o *txn.Op, trig []Trigger) (txn.Result, []Trigger) {
	switch o.Kind {
	case txn.KindCreate:
		return t.create(e, o, trig)
	case txn.KindDelete:
		return t.delete(e, o, trig)
	case txn.KindSetData:
		return t.setData(e, o, trig)
	case txn.KindSetACL:
		return t.setACL(e, o), trig
	case txn.KindCheck:
		return t.check(e, o), trig
	}
	return fail(zkproto.ErrBadArguments), trig
}

func (t *Tree) hasSession(id int64) bool { return t.sessions[id] != nil }

// validPath is PathUtils.validatePath, through zkproto.
func validPath(p string) bool { return zkproto.ValidatePath(p, false) == nil }

// create is PrepRequestProcessor.pRequest2TxnCreate plus DataTree.createNode.
func (t *Tree) create(e *txn.Entry, o *txn.Op, trig []Trigger) (txn.Result, []Trigger) {
	// CreateMode.fromFlag.
	mode := o.Flags
	if mode < zkproto.ModePersistent || mode > zkproto.ModePersistentSequentialWithTTL {
		return fail(zkproto.ErrBadArguments), trig
	}
	ttlMode := mode == zkproto.ModePersistentWithTTL || mode == zkproto.ModePersistentSequentialWithTTL
	sequential := mode == zkproto.ModePersistentSequential || mode == zkproto.ModeEphemeralSequential ||
		mode == zkproto.ModePersistentSequentialWithTTL
	ephemeral := mode == zkproto.ModeEphemeral || mode == zkproto.ModeEphemeralSequential

	// EphemeralType.validateTTL: only createTTL carries a TTL, it needs a
	// TTL mode and a TTL in (0, MaxTTLMillis]; a TTL mode without one is
	// invalid. (ZooKeeper lets createTTL with a plain mode and TTL -1 through
	// prep and then fails in DataTree; it is refused here instead.)
	if o.OpCode == zkproto.OpCreateTTL {
		if !ttlMode || o.TTL <= 0 || o.TTL > zkproto.MaxTTLMillis {
			return fail(zkproto.ErrBadArguments), trig
		}
	} else if ttlMode {
		return fail(zkproto.ErrBadArguments), trig
	}
	if !t.hasSession(e.Session) {
		return fail(zkproto.ErrSessionExpired), trig
	}
	// validatePathForCreate: only the parent is needed yet; the full path
	// is validated once its sequential suffix is known.
	parentPath, _, ok := splitPath(o.Path)
	if !ok || strings.IndexByte(o.Path, 0) >= 0 {
		return fail(zkproto.ErrBadArguments), trig
	}
	list, err := acl.Fixup(o.ACL, e.Auth)
	if err != nil {
		return fail(zkproto.ErrInvalidACL), trig
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return fail(zkproto.ErrNoNode), trig
	}
	if !acl.Check(parent.acl.list, zkproto.PermCreate, e.Auth) {
		return fail(zkproto.ErrNoAuth), trig
	}
	path := o.Path
	if sequential {
		path = string(appendSequence([]byte(o.Path), parent.cversion))
	}
	if !validPath(path) {
		return fail(zkproto.ErrBadArguments), trig
	}
	if t.nodes[path] != nil {
		return fail(zkproto.ErrNodeExists), trig
	}
	if ownerKindOf(parent.owner) == ownerSession {
		return fail(zkproto.ErrNoChildrenForEphemerals), trig
	}

	// The transaction type, not the mode, decides the node type, as in
	// DataTree.processTxn: a plain create with the container flag makes a
	// persistent node.
	var owner int64
	switch {
	case o.OpCode == zkproto.OpCreateContainer:
		owner = zkproto.ContainerOwner
	case o.OpCode == zkproto.OpCreateTTL:
		owner = ttlOwner(o.TTL)
	case ephemeral:
		owner = e.Session
	}

	n, trig := t.createNode(e, path, parentPath, parent, o.Data, list, owner, trig)
	return txn.Result{Path: path, Stat: n.stat()}, trig
}

// createNode is DataTree.createNode once every check has passed: it adds
// the node at path, created by entry e, under parent and returns it.
func (t *Tree) createNode(e *txn.Entry, path, parentPath string, parent *node, data []byte, list []zkproto.ACL,
	owner int64, trig []Trigger) (*node, []Trigger) {
	t.beginChange(parent)
	// The counter wraps at 2^31 (zookeeperProgrammers.md, "Sequence Nodes").
	parent.cversion++
	parent.pzxid = e.Zxid
	t.endChange(parent)

	n := &node{}
	n.data = data
	n.czxid, n.mzxid, n.pzxid = e.Zxid, e.Zxid, e.Zxid
	n.ctime, n.mtime = e.Time, e.Time
	n.owner = owner
	n.pathHash = hashPath(path)
	n.dataHash = hashData(data)
	_, name, _ := splitPath(path)
	t.addNode(path, parent, name, n, t.acls.acquire(list))
	t.quotaNodeCreated(parentPath, name)
	t.updateQuota(path, 1, int64(len(data)))

	trig = append(trig,
		Trigger{Type: zkproto.EventNodeCreated, Path: path, Zxid: e.Zxid, ACL: n.acl.list},
		Trigger{Type: zkproto.EventNodeChildrenChanged, Path: parentPath, Zxid: e.Zxid, ACL: parent.acl.list})
	return n, trig
}

// parentForDelete is getParentPathAndValidate: the system nodes and paths
// without a '/' or with a NUL are bad arguments.
func parentForDelete(p string) (parent, name string, ok bool) {
	if strings.IndexByte(p, 0) >= 0 || isSpecialPath(p) {
		return "", "", false
	}
	return splitPath(p)
}

// versionMatches is checkAndIncVersion's test: -1 matches any version.
func versionMatches(expected, current int32) bool { return expected == -1 || expected == current }

func (t *Tree) delete(e *txn.Entry, o *txn.Op, trig []Trigger) (txn.Result, []Trigger) {
	if !t.hasSession(e.Session) {
		return fail(zkproto.ErrSessionExpired), trig
	}
	parentPath, name, ok := parentForDelete(o.Path)
	if !ok {
		return fail(zkproto.ErrBadArguments), trig
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return fail(zkproto.ErrNoNode), trig
	}
	if !acl.Check(parent.acl.list, zkproto.PermDelete, e.Auth) {
		return fail(zkproto.ErrNoAuth), trig
	}
	n := t.nodes[o.Path]
	if n == nil {
		return fail(zkproto.ErrNoNode), trig
	}
	if !versionMatches(o.Version, n.version) {
		return fail(zkproto.ErrBadVersion), trig
	}
	if len(n.children) > 0 {
		return fail(zkproto.ErrNotEmpty), trig
	}
	return txn.Result{}, t.deleteNode(o.Path, parentPath, parent, name, n, e.Zxid, trig)
}

// deleteNode is DataTree.deleteNode once every check has passed.
func (t *Tree) deleteNode(path, parentPath string, parent *node, name string, n *node, zxid int64, trig []Trigger) []Trigger {
	t.beginChange(parent)
	if zxid > parent.pzxid {
		parent.pzxid = zxid
	}
	t.endChange(parent)
	acls := n.acl.list
	t.updateQuota(path, -1, -int64(len(n.data)))
	t.removeNode(path, parent, name, n)
	return append(trig,
		Trigger{Type: zkproto.EventNodeDeleted, Path: path, Zxid: zxid, ACL: acls},
		Trigger{Type: zkproto.EventNodeChildrenChanged, Path: parentPath, Zxid: zxid, ACL: parent.acl.list})
}

func (t *Tree) setData(e *txn.Entry, o *txn.Op, trig []Trigger) (txn.Result, []Trigger) {
	if !t.hasSession(e.Session) {
		return fail(zkproto.ErrSessionExpired), trig
	}
	if !validPath(o.Path) {
		return fail(zkproto.ErrBadArguments), trig
	}
	n := t.nodes[o.Path]
	if n == nil {
		return fail(zkproto.ErrNoNode), trig
	}
	if !acl.Check(n.acl.list, zkproto.PermWrite, e.Auth) {
		return fail(zkproto.ErrNoAuth), trig
	}
	if !versionMatches(o.Version, n.version) {
		return fail(zkproto.ErrBadVersion), trig
	}
	diff := int64(len(o.Data) - len(n.data))
	trig = append(trig, t.changeData(o.Path, n, o.Data, e.Zxid, e.Time))
	t.updateQuota(o.Path, 0, diff)
	return okStat(n), trig
}

// changeData replaces n's data, as a write at zxid and time now, and
// returns the trigger of the change.
func (t *Tree) changeData(path string, n *node, data []byte, zxid, now int64) Trigger {
	t.beginChange(n)
	n.data = data
	n.dataHash = hashData(data)
	n.mtime = now
	n.mzxid = zxid
	n.version++
	t.endChange(n)
	return Trigger{Type: zkproto.EventNodeDataChanged, Path: path, Zxid: zxid, ACL: n.acl.list}
}

// setACL is never part of a multi (ZooKeeper's MultiOperationRecord has no
// setACL), so it does not record undo information for its ACL.
func (t *Tree) setACL(e *txn.Entry, o *txn.Op) txn.Result {
	if !t.hasSession(e.Session) {
		return fail(zkproto.ErrSessionExpired)
	}
	if !validPath(o.Path) {
		return fail(zkproto.ErrBadArguments)
	}
	list, err := acl.Fixup(o.ACL, e.Auth)
	if err != nil {
		return fail(zkproto.ErrInvalidACL)
	}
	n := t.nodes[o.Path]
	if n == nil {
		return fail(zkproto.ErrNoNode)
	}
	if !acl.Check(n.acl.list, zkproto.PermAdmin, e.Auth) {
		return fail(zkproto.ErrNoAuth)
	}
	if !versionMatches(o.Version, n.aversion) {
		return fail(zkproto.ErrBadVersion)
	}
	// Acquire before release: an unchanged list keeps its shared set.
	next := t.acls.acquire(list)
	prev := n.acl
	t.beginChange(n)
	n.acl = next
	n.aversion++
	t.endChange(n)
	t.acls.release(prev)
	return okStat(n)
}

func (t *Tree) check(e *txn.Entry, o *txn.Op) txn.Result {
	if !t.hasSession(e.Session) {
		return fail(zkproto.ErrSessionExpired)
	}
	if !validPath(o.Path) {
		return fail(zkproto.ErrBadArguments)
	}
	n := t.nodes[o.Path]
	if n == nil {
		return fail(zkproto.ErrNoNode)
	}
	if !acl.Check(n.acl.list, zkproto.PermRead, e.Auth) {
		return fail(zkproto.ErrNoAuth)
	}
	if !versionMatches(o.Version, n.version) {
		return fail(zkproto.ErrBadVersion)
	}
	return txn.Result{}
}

// deleteContainer is the reaper's delete (PrepRequestProcessor's
// deleteContainer case). ZooKeeper refuses only ephemeral nodes here; this
// also re-checks that the node is still a reap candidate at the entry's
// time (a container, or a TTL node whose TTL has run out since its last
// change), so that a node changed or re-created after the reaper looked is
// never deleted by a stale decision. Such an entry fails with BADVERSION,
// ZooKeeper's code for the ephemeral case.
func (t *Tree) deleteContainer(e *txn.Entry, o *txn.Op) (txn.Result, []Trigger) {
	parentPath, name, ok := parentForDelete(o.Path)
	if !ok {
		return fail(zkproto.ErrBadArguments), nil
	}
	n := t.nodes[o.Path]
	if n == nil {
		return fail(zkproto.ErrNoNode), nil
	}
	if len(n.children) > 0 {
		return fail(zkproto.ErrNotEmpty), nil
	}
	switch ownerKindOf(n.owner) {
	case ownerContainer:
	case ownerTTL:
		if !ttlExpired(n, e.Time) {
			return fail(zkproto.ErrBadVersion), nil
		}
	default:
		return fail(zkproto.ErrBadVersion), nil
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return fail(zkproto.ErrNoNode), nil
	}
	return txn.Result{}, t.deleteNode(o.Path, parentPath, parent, name, n, e.Zxid, nil)
}
