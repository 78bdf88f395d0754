package datatree

import (
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Trigger is one raw change to the tree, for the server's watch registry to
// map to watchers: a create is NodeCreated on the path and
// NodeChildrenChanged on its parent, a delete NodeDeleted and
// NodeChildrenChanged, a setData NodeDataChanged. Zxid is the entry's.
type Trigger struct {
	Type zkproto.EventType // what happened
	Path string            // to which node
	Zxid int64             // in which entry
	// ACL is the ACL of the node the event is about (for a deletion, the
	// ACL it had), shared with the tree and never to be modified. As in
	// ZooKeeper 3.9, only watchers with READ on it are told.
	ACL []zkproto.ACL
}

// SessionInfo is a session table entry.
type SessionInfo struct {
	ID      int64  // session id
	Timeout int32  // negotiated timeout, ms
	Passwd  []byte // the password a reconnecting client must present
}

type session struct {
	timeout int32
	passwd  []byte
	digest  uint64
}

// Tree is the znode tree and the session table. The zero Tree is not usable;
// call New or ReadSnapshot.
type Tree struct {
	nodes map[string]*node
	acls  aclTable

	sessions   map[int64]*session
	ephemerals map[int64]map[string]struct{} // session -> its ephemeral paths
	containers map[string]struct{}
	ttls       map[string]struct{}

	lastZxid       int64
	digest         uint64
	dataSize       int64 // sum of len(path)+len(data) over all nodes
	ephemeralCount int

	// tops accounts for each top-level subtree, by name ("" for "/"
	// alone); touched lists those the entry being applied changed
	// (subtree.go).
	tops    map[string]*subtree
	touched []*subtree

	// sections are the top-level names whose subtrees snapshots checksum
	// on their own (SetSnapshotSections).
	sections []string

	// undo is the rollback log of the multi being applied; logging says
	// whether changes are being recorded in it.
	undo    []undoRecord
	logging bool

	// gate, when set, decides which entries Apply applies (SetGate).
	gate func(*txn.Entry) bool

	// snap is the snapshot being written, if any (snapshot_view.go);
	// snapGens counts the snapshots begun, naming each.
	snap     *snapView
	snapGens uint32
}

// New returns the tree of a fresh ZooKeeper 3.9 server: "/" with the system
// nodes "/zookeeper", "/zookeeper/quota" and "/zookeeper/config". All have
// zero stats and the open ACL, except "/zookeeper/config", which is
// world-readable only with aversion -1, because ZooKeeper sets that ACL with
// version -1 when it builds the node (ZOOKEEPER-2014). The session table is
// empty.
func New() *Tree {
	t := newEmpty()
	root := &node{}
	t.insert(rootPath, nil, "", root, zkproto.OpenACLUnsafe)
	t.insert(procPath, root, "zookeeper", &node{}, zkproto.OpenACLUnsafe)
	proc := t.nodes[procPath]
	t.insert(quotaPath, proc, "quota", &node{}, zkproto.OpenACLUnsafe)
	cfg := &node{}
	cfg.aversion = -1
	t.insert(ConfigPath, proc, "config", cfg, zkproto.ReadACLUnsafe)
	t.settle(0, true)
	return t
}

func newEmpty() *Tree {
	return &Tree{
		nodes:      make(map[string]*node),
		acls:       newACLTable(),
		sessions:   make(map[int64]*session),
		ephemerals: make(map[int64]map[string]struct{}),
		containers: make(map[string]struct{}),
		ttls:       make(map[string]struct{}),
		tops:       make(map[string]*subtree),
	}
}

// insert adds a system node n (its stat already set) with empty data under
// parent.
func (t *Tree) insert(path string, parent *node, name string, n *node, acl []zkproto.ACL) {
	n.data = []byte{}
	n.pathHash = hashPath(path)
	n.dataHash = hashData(n.data)
	t.addNode(path, parent, name, n, t.acls.acquire(acl))
}

// LastZxid returns the zxid of the last entry applied (or of the snapshot
// the tree was read from).
func (t *Tree) LastZxid() int64 { return t.lastZxid }

// NodeCount returns the number of znodes, the root included. (ZooKeeper's
// zk_znode_count is one more: its node table holds the root twice.)
func (t *Tree) NodeCount() int { return len(t.nodes) }

// ApproximateDataSize returns the sum over all znodes of the length of the
// path and of the data, as ZooKeeper's approximateDataSize.
func (t *Tree) ApproximateDataSize() int64 { return t.dataSize }

// EphemeralCount returns the number of ephemeral nodes owned by sessions
// (containers and TTL nodes are not counted, as in ZooKeeper).
func (t *Tree) EphemeralCount() int { return t.ephemeralCount }

// Digest returns an order-independent hash of every node's path, data, stat
// and ACL and of every session in the table. Replicas that applied the same
// entries have equal digests; it is maintained incrementally, so reading it
// is O(1).
func (t *Tree) Digest() uint64 { return t.digest }

// okStat is the Result of a successful op that reports the node's Stat.
func okStat(n *node) txn.Result { return txn.Result{Stat: n.stat()} }
