package datatree

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Sessions and identities used across the tests.
const (
	sess  int64 = 0x100000001 // a session with no authenticated id
	sess2 int64 = 0x100000002 // a session authenticated as alice
)

var (
	alice     = zkproto.Id{Scheme: "digest", ID: acl.DigestID("alice", "secret")}
	bob       = zkproto.Id{Scheme: "digest", ID: acl.DigestID("bob", "secret")}
	aliceAll  = []zkproto.ACL{{Perms: zkproto.PermAll, ID: alice}}
	worldOnly = func(perms int32) []zkproto.ACL { return []zkproto.ACL{{Perms: perms, ID: zkproto.AnyoneID}} }
)

func TestNew(t *testing.T) {
	tr := New()
	checkInvariants(t, tr)
	kids, st, code := tr.Children("/", nil)
	if code != zkproto.OK || !slices.Equal(kids, []string{"zookeeper"}) {
		t.Fatalf("ls / = %v, %v", kids, code)
	}
	// DataNode.copyStat: cversion = 2*0 - numChildren.
	if want := (zkproto.Stat{Cversion: -1, NumChildren: 1}); st != want {
		t.Errorf("stat / = %+v, want %+v", st, want)
	}
	kids, st, _ = tr.Children("/zookeeper", nil)
	if !slices.Equal(kids, []string{"config", "quota"}) || st != (zkproto.Stat{Cversion: -2, NumChildren: 2}) {
		t.Errorf("ls /zookeeper = %v %+v", kids, st)
	}
	if st := stat(t, tr, "/zookeeper/quota"); st != (zkproto.Stat{}) {
		t.Errorf("stat /zookeeper/quota = %+v", st)
	}
	cfgACL, st, _ := tr.GetACL("/zookeeper/config", nil)
	if st != (zkproto.Stat{Aversion: -1}) || !slices.Equal(cfgACL, zkproto.ReadACLUnsafe) {
		t.Errorf("/zookeeper/config: acl %v stat %+v", cfgACL, st)
	}
	for _, p := range []string{"/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"} {
		if data, _, code := tr.GetData(p, nil); code != zkproto.OK || data == nil || len(data) != 0 {
			t.Errorf("get %s = %q (nil %v), %v; want empty non-null data", p, data, data == nil, code)
		}
	}
	if tr.NodeCount() != 4 || tr.ApproximateDataSize() != int64(len("/zookeeper/zookeeper/quota/zookeeper/config")+1) ||
		tr.EphemeralCount() != 0 || len(tr.Sessions()) != 0 || tr.LastZxid() != 0 {
		t.Errorf("counters of a new tree: nodes %d size %d", tr.NodeCount(), tr.ApproximateDataSize())
	}
	if New().Digest() != tr.Digest() || tr.Digest() == 0 {
		t.Errorf("digest of a new tree is not a fixed non-zero value")
	}
}

func TestCreateStat(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	rootBefore := stat(t, h.tree, "/")
	r, trig := h.must(txn.Entry{Session: sess, Op: createOp("/a", []byte("abc"), zkproto.ModePersistent)})
	z, now := h.zxid, h.now
	want := zkproto.Stat{Czxid: z, Mzxid: z, Pzxid: z, Ctime: now, Mtime: now, DataLength: 3}
	if r.Path != "/a" || r.Stat != want {
		t.Fatalf("create /a = %q %+v, want %+v", r.Path, r.Stat, want)
	}
	if st := stat(t, h.tree, "/a"); st != want {
		t.Fatalf("stat /a = %+v", st)
	}
	root := stat(t, h.tree, "/")
	if root.Pzxid != z || root.Cversion != rootBefore.Cversion+1 || root.NumChildren != 2 ||
		root.Mzxid != 0 || root.Version != 0 {
		t.Fatalf("root after create: %+v (before %+v)", root, rootBefore)
	}
	wantTrig := []Trigger{{zkproto.EventNodeCreated, "/a", z, nil}, {zkproto.EventNodeChildrenChanged, "/", z, nil}}
	if !equalTriggers(trig, wantTrig) {
		t.Fatalf("triggers %v, want %v", trig, wantTrig)
	}

	// A child: the parent's visible cversion counts creates and deletes.
	h.must(txn.Entry{Session: sess, Op: createOp("/a/b", nil, zkproto.ModePersistent)})
	h.must(txn.Entry{Session: sess, Op: deleteOp("/a/b", -1)})
	h.must(txn.Entry{Session: sess, Op: createOp("/a/c", []byte{}, zkproto.ModePersistent)})
	if st := stat(t, h.tree, "/a"); st.Cversion != 3 || st.NumChildren != 1 || st.Pzxid != h.zxid || st.Mzxid != z {
		t.Fatalf("stat /a after create, delete, create: %+v", st)
	}
	// Null data stays null, empty stays empty.
	if d, _, _ := h.tree.GetData("/a/c", nil); d == nil {
		t.Errorf("empty data read back as null")
	}
	h.must(txn.Entry{Session: sess, Op: createOp("/a/n", nil, zkproto.ModePersistent)})
	if d, st, _ := h.tree.GetData("/a/n", nil); d != nil || st.DataLength != 0 {
		t.Errorf("null data read back as %q", d)
	}
}

func TestCreateNodeTypes(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	ttlCreate := func(path string, mode int32, ttl int64) txn.Op {
		o := createOp(path, nil, mode)
		o.OpCode, o.TTL = zkproto.OpCreateTTL, ttl
		return o
	}
	container := createOp("/c", nil, zkproto.ModeContainer)
	container.OpCode = zkproto.OpCreateContainer

	tests := []struct {
		name      string
		op        txn.Op
		path      string
		kind      ownerKind
		owner     int64 // the stored owner
		statOwner int64 // the owner a client sees
	}{
		{"persistent", createOp("/p", nil, zkproto.ModePersistent), "/p", ownerNone, 0, 0},
		{"ephemeral", createOp("/e", nil, zkproto.ModeEphemeral), "/e", ownerSession, sess, sess},
		{"persistent sequential", createOp("/s-", nil, zkproto.ModePersistentSequential), "/s-0000000002", ownerNone, 0, 0},
		{"ephemeral sequential", createOp("/s-", nil, zkproto.ModeEphemeralSequential), "/s-0000000003", ownerSession, sess, sess},
		{"container", container, "/c", ownerContainer, zkproto.ContainerOwner, 0},
		{"ttl", ttlCreate("/t", zkproto.ModePersistentWithTTL, 5000), "/t", ownerTTL, ttlOwner(5000), 0},
		{"ttl sequential", ttlCreate("/t-", zkproto.ModePersistentSequentialWithTTL, zkproto.MaxTTLMillis), "/t-0000000006",
			ownerTTL, ttlOwner(zkproto.MaxTTLMillis), 0},
		// The transaction type decides: a plain create with the container
		// flag is a persistent node, as in ZooKeeper.
		{"create with container flag", createOp("/pc", nil, zkproto.ModeContainer), "/pc", ownerNone, 0, 0},
	}
	for _, tc := range tests {
		r, _ := h.must(txn.Entry{Session: sess, Op: tc.op})
		if r.Path != tc.path {
			t.Errorf("%s: path %q, want %q", tc.name, r.Path, tc.path)
			continue
		}
		n := h.tree.nodes[tc.path]
		if ownerKindOf(n.owner) != tc.kind || n.owner != tc.owner || r.Stat.EphemeralOwner != tc.statOwner {
			t.Errorf("%s: owner %#x (kind %d), stat owner %#x", tc.name, n.owner, ownerKindOf(n.owner), r.Stat.EphemeralOwner)
		}
	}
	if got := h.tree.Ephemerals(sess, "/"); !slices.Equal(got, []string{"/e", "/s-0000000003"}) || h.tree.EphemeralCount() != 2 {
		t.Errorf("ephemerals %v, count %d", got, h.tree.EphemeralCount())
	}
}

func TestSequentialSuffix(t *testing.T) {
	for _, c := range []int32{0, 1, 42, 999999999, 1000000000, math.MaxInt32, -1, -42, math.MinInt32} {
		if got, want := string(appendSequence(nil, c)), fmt.Sprintf("%010d", c); got != want {
			t.Errorf("suffix(%d) = %q, want %q", c, got, want)
		}
	}
	// The counter wraps past 2^31-1 (zookeeperProgrammers.md).
	h := newHarness(t)
	h.session(sess)
	h.must(txn.Entry{Session: sess, Op: createOp("/q", nil, zkproto.ModePersistent)})
	q := h.tree.nodes["/q"]
	h.tree.beginChange(q)
	q.cversion = math.MaxInt32
	h.tree.endChange(q)
	for _, want := range []string{"/q/x2147483647", "/q/x-2147483648", "/q/x-2147483647"} {
		r, _ := h.must(txn.Entry{Session: sess, Op: createOp("/q/x", nil, zkproto.ModePersistentSequential)})
		if r.Path != want {
			t.Fatalf("sequential create = %q, want %q", r.Path, want)
		}
	}
}

func TestCreateErrors(t *testing.T) {
	ttl := func(o txn.Op, ttl int64) txn.Op { o.OpCode, o.TTL = zkproto.OpCreateTTL, ttl; return o }
	withACL := func(o txn.Op, a []zkproto.ACL) txn.Op { o.ACL = a; return o }
	eph := createOp("/eph", nil, zkproto.ModeEphemeral)
	setup := []txn.Entry{
		{Session: sess, Op: createOp("/a", nil, zkproto.ModePersistent)},
		{Session: sess, Op: eph},
		{Session: sess, Op: createACL("/ro", worldOnly(zkproto.PermAll&^zkproto.PermCreate))},
	}
	tests := []struct {
		name    string
		session int64
		auth    []zkproto.Id
		op      txn.Op
		want    zkproto.Code
	}{
		{"flags too large", sess, nil, createOp("/x", nil, 7), zkproto.ErrBadArguments},
		{"negative flags", sess, nil, createOp("/x", nil, -1), zkproto.ErrBadArguments},
		{"bad flags before session", 99, nil, createOp("/x", nil, 9), zkproto.ErrBadArguments},
		{"ttl mode without createTTL", sess, nil, createOp("/x", nil, zkproto.ModePersistentWithTTL), zkproto.ErrBadArguments},
		{"createTTL with a plain mode", sess, nil, ttl(createOp("/x", nil, zkproto.ModePersistent), 100), zkproto.ErrBadArguments},
		{"createTTL with ttl 0", sess, nil, ttl(createOp("/x", nil, zkproto.ModePersistentWithTTL), 0), zkproto.ErrBadArguments},
		{"createTTL with ttl -1", sess, nil, ttl(createOp("/x", nil, zkproto.ModePersistentWithTTL), -1), zkproto.ErrBadArguments},
		{"createTTL over the max", sess, nil, ttl(createOp("/x", nil, zkproto.ModePersistentWithTTL), zkproto.MaxTTLMillis+1), zkproto.ErrBadArguments},
		{"ttl checked before session", 99, nil, ttl(createOp("/x", nil, zkproto.ModePersistentWithTTL), 0), zkproto.ErrBadArguments},
		{"unknown session", 99, nil, createOp("/x", nil, zkproto.ModePersistent), zkproto.ErrSessionExpired},
		{"session before path", 99, nil, createOp("x", nil, zkproto.ModePersistent), zkproto.ErrSessionExpired},
		{"no slash", sess, nil, createOp("x", nil, zkproto.ModePersistent), zkproto.ErrBadArguments},
		{"empty path", sess, nil, createOp("", nil, zkproto.ModePersistent), zkproto.ErrBadArguments},
		{"nul", sess, nil, createOp("/a\x00b", nil, zkproto.ModePersistent), zkproto.ErrBadArguments},
		{"empty acl", sess, nil, withACL(createOp("/x", nil, 0), []zkproto.ACL{}), zkproto.ErrInvalidACL},
		{"nil acl", sess, nil, withACL(createOp("/x", nil, 0), nil), zkproto.ErrInvalidACL},
		{"auth acl without auth", sess, nil, withACL(createOp("/x", nil, 0), zkproto.CreatorAllACL), zkproto.ErrInvalidACL},
		{"bad scheme", sess, nil, withACL(createOp("/x", nil, 0), []zkproto.ACL{{Perms: 1, ID: zkproto.Id{Scheme: "foo", ID: "x"}}}), zkproto.ErrInvalidACL},
		{"acl before parent", sess, nil, withACL(createOp("/none/x", nil, 0), nil), zkproto.ErrInvalidACL},
		{"no parent", sess, nil, createOp("/none/x", nil, 0), zkproto.ErrNoNode},
		{"double slash: no parent named /a/", sess, nil, createOp("/a//x", nil, 0), zkproto.ErrNoNode},
		{"trailing slash, missing parent", sess, nil, createOp("/none/", nil, 0), zkproto.ErrNoNode},
		{"trailing slash", sess, nil, createOp("/a/", nil, 0), zkproto.ErrBadArguments},
		{"relative", sess, nil, createOp("/a/..", nil, 0), zkproto.ErrBadArguments},
		{"no create permission", sess, nil, createOp("/ro/x", nil, 0), zkproto.ErrNoAuth},
		{"permission before path", sess, nil, createOp("/ro/", nil, 0), zkproto.ErrNoAuth},
		{"super may create", sess, []zkproto.Id{acl.SuperID}, createOp("/ro/x", nil, 0), zkproto.OK},
		{"exists", sess, nil, createOp("/a", nil, 0), zkproto.ErrNodeExists},
		{"root exists", sess, nil, createOp("/", nil, 0), zkproto.ErrNodeExists},
		{"system node exists", sess, nil, createOp("/zookeeper", nil, 0), zkproto.ErrNodeExists},
		{"under the system nodes", sess, nil, createOp("/zookeeper/mine", nil, 0), zkproto.OK},
		{"under an ephemeral", sess, nil, createOp("/eph/x", nil, 0), zkproto.ErrNoChildrenForEphemerals},
		{"sequential under an ephemeral", sess, nil, createOp("/eph/x", nil, zkproto.ModePersistentSequential), zkproto.ErrNoChildrenForEphemerals},
		{"exists before ephemeral parent", sess, nil, createOp("/eph", nil, 0), zkproto.ErrNodeExists},
	}
	for _, tc := range tests {
		h := newHarness(t)
		h.session(sess)
		for _, e := range setup {
			h.must(e)
		}
		before := dump(h.tree)
		r, trig := h.apply(txn.Entry{Session: tc.session, Auth: tc.auth, Op: tc.op})
		if r.Err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, r.Err, tc.want)
			continue
		}
		if tc.want != zkproto.OK && (len(trig) != 0 || dump(h.tree) != before) {
			t.Errorf("%s: a failed create changed the tree or fired triggers %v", tc.name, trig)
		}
	}
}

func TestCreateACL(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	h.session(sess2)
	// auth expands to the creator's authenticated ids (ip ids do not count).
	auth := []zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}, alice}
	h.must(txn.Entry{Session: sess2, Auth: auth, Op: createACL("/mine", zkproto.CreatorAllACL)})
	got, _, code := h.tree.GetACL("/mine", auth)
	if code != zkproto.OK || !slices.Equal(got, aliceAll) {
		t.Fatalf("acl of /mine = %v, %v", got, code)
	}
	// Others may not create under it; alice may.
	if r, _ := h.apply(txn.Entry{Session: sess, Auth: []zkproto.Id{bob}, Op: createOp("/mine/x", nil, 0)}); r.Err != zkproto.ErrNoAuth {
		t.Fatalf("bob creates under alice's node: %v", r.Err)
	}
	h.must(txn.Entry{Session: sess, Auth: []zkproto.Id{alice}, Op: createOp("/mine/x", nil, 0)})
	// Duplicates are dropped; equal lists share one interned set.
	dup := []zkproto.ACL{aliceAll[0], aliceAll[0]}
	h.must(txn.Entry{Session: sess, Op: createACL("/dup", dup)})
	if h.tree.nodes["/dup"].acl != h.tree.nodes["/mine"].acl {
		t.Errorf("equal ACL lists are not shared")
	}
}
