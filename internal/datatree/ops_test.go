package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/acl"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// opErrorCase is one write applied after a common setup; a failing write
// must leave the tree exactly as it was and fire nothing.
type opErrorCase struct {
	name    string
	session int64
	auth    []zkproto.Id
	op      txn.Op
	want    zkproto.Code
}

// opsSetup builds:
//
//	/a            open, version 0
//	/a/b          open
//	/nodel        open except DELETE; child /nodel/x
//	/nowrite      open except WRITE
//	/noadmin      open except ADMIN
//	/noread       open except READ
//	/alice        alice only
func opsSetup(h *harness) {
	h.session(sess)
	for _, e := range []txn.Entry{
		{Session: sess, Op: createOp("/a", []byte("a"), zkproto.ModePersistent)},
		{Session: sess, Op: createOp("/a/b", nil, zkproto.ModePersistent)},
		{Session: sess, Op: createACL("/nodel", worldOnly(zkproto.PermAll&^zkproto.PermDelete))},
		{Session: sess, Op: createOp("/nodel/x", nil, zkproto.ModePersistent)},
		{Session: sess, Op: createACL("/nowrite", worldOnly(zkproto.PermAll&^zkproto.PermWrite))},
		{Session: sess, Op: createACL("/noadmin", worldOnly(zkproto.PermAll&^zkproto.PermAdmin))},
		{Session: sess, Op: createACL("/noread", worldOnly(zkproto.PermAll&^zkproto.PermRead))},
		{Session: sess, Op: createACL("/alice", aliceAll)},
	} {
		h.must(e)
	}
}

func runOpErrorCases(t *testing.T, tests []opErrorCase) {
	t.Helper()
	for _, tc := range tests {
		h := newHarness(t)
		opsSetup(h)
		before := dump(h.tree)
		r, trig := h.apply(txn.Entry{Session: tc.session, Auth: tc.auth, Op: tc.op})
		if r.Err != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, r.Err, tc.want)
			continue
		}
		if tc.want != zkproto.OK && (len(trig) != 0 || dump(h.tree) != before) {
			t.Errorf("%s: failed op changed the tree or fired %v", tc.name, trig)
		}
	}
}

func TestDelete(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	before := stat(t, h.tree, "/a")
	_, trig := h.must(txn.Entry{Session: sess, Op: deleteOp("/a/b", 0)})
	z := h.zxid
	after := stat(t, h.tree, "/a")
	want := before
	want.Pzxid, want.Cversion, want.NumChildren = z, before.Cversion+1, 0
	if after != want {
		t.Fatalf("parent after delete %+v, want %+v", after, want)
	}
	if !equalTriggers(trig, []Trigger{{zkproto.EventNodeDeleted, "/a/b", z, nil}, {zkproto.EventNodeChildrenChanged, "/a", z, nil}}) {
		t.Fatalf("triggers %v", trig)
	}
	if _, code := h.tree.Exists("/a/b", nil); code != zkproto.ErrNoNode {
		t.Fatalf("deleted node still exists")
	}
	// A child of the root names "/" in its parent trigger.
	_, trig = h.must(txn.Entry{Session: sess, Op: deleteOp("/a", -1)})
	if trig[1].Path != "/" {
		t.Fatalf("parent trigger %v", trig[1])
	}

	runOpErrorCases(t, []opErrorCase{
		{"ok", sess, nil, deleteOp("/a/b", -1), zkproto.OK},
		{"unknown session", 99, nil, deleteOp("/a/b", -1), zkproto.ErrSessionExpired},
		{"root", sess, nil, deleteOp("/", -1), zkproto.ErrBadArguments},
		{"/zookeeper", sess, nil, deleteOp("/zookeeper", -1), zkproto.ErrBadArguments},
		{"/zookeeper/quota", sess, nil, deleteOp("/zookeeper/quota", -1), zkproto.ErrBadArguments},
		{"/zookeeper/config", sess, []zkproto.Id{acl.SuperID}, deleteOp("/zookeeper/config", -1), zkproto.ErrBadArguments},
		{"no slash", sess, nil, deleteOp("a", -1), zkproto.ErrBadArguments},
		{"nul", sess, nil, deleteOp("/a\x00", -1), zkproto.ErrBadArguments},
		{"no parent", sess, nil, deleteOp("/none/x", -1), zkproto.ErrNoNode},
		{"no node", sess, nil, deleteOp("/a/none", -1), zkproto.ErrNoNode},
		{"trailing slash is just a missing node", sess, nil, deleteOp("/a/", -1), zkproto.ErrNoNode},
		{"no delete permission", sess, nil, deleteOp("/nodel/x", -1), zkproto.ErrNoAuth},
		{"permission before existence", sess, nil, deleteOp("/nodel/none", -1), zkproto.ErrNoAuth},
		{"node's own ACL does not matter", sess, nil, deleteOp("/nowrite", -1), zkproto.OK},
		{"bad version", sess, nil, deleteOp("/a/b", 1), zkproto.ErrBadVersion},
		{"not empty", sess, nil, deleteOp("/a", -1), zkproto.ErrNotEmpty},
		{"version before emptiness", sess, nil, deleteOp("/a", 5), zkproto.ErrBadVersion},
	})
}

func TestSetData(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	before := stat(t, h.tree, "/a")
	r, trig := h.must(txn.Entry{Session: sess, Op: setDataOp("/a", []byte("hello"), 0)})
	want := before
	want.Mzxid, want.Mtime, want.Version, want.DataLength = h.zxid, h.now, 1, 5
	if r.Stat != want || stat(t, h.tree, "/a") != want {
		t.Fatalf("setData stat %+v, want %+v", r.Stat, want)
	}
	if !equalTriggers(trig, []Trigger{{zkproto.EventNodeDataChanged, "/a", h.zxid, nil}}) {
		t.Fatalf("triggers %v", trig)
	}
	if d, _, _ := h.tree.GetData("/a", nil); string(d) != "hello" {
		t.Fatalf("data %q", d)
	}
	// Null data can be set and reads back null.
	h.must(txn.Entry{Session: sess, Op: setDataOp("/a", nil, -1)})
	if d, st, _ := h.tree.GetData("/a", nil); d != nil || st.Version != 2 {
		t.Fatalf("null data: %q %+v", d, st)
	}
	// The root's data can be set like any node's.
	h.must(txn.Entry{Session: sess, Op: setDataOp("/", []byte("r"), -1)})

	runOpErrorCases(t, []opErrorCase{
		{"ok", sess, nil, setDataOp("/a", nil, 0), zkproto.OK},
		{"unknown session", 99, nil, setDataOp("/a", nil, -1), zkproto.ErrSessionExpired},
		{"invalid path", sess, nil, setDataOp("/a/", nil, -1), zkproto.ErrBadArguments},
		{"invalid path before existence", sess, nil, setDataOp("/none/", nil, -1), zkproto.ErrBadArguments},
		{"no node", sess, nil, setDataOp("/none", nil, -1), zkproto.ErrNoNode},
		{"no write permission", sess, nil, setDataOp("/nowrite", nil, -1), zkproto.ErrNoAuth},
		{"permission before version", sess, nil, setDataOp("/nowrite", nil, 7), zkproto.ErrNoAuth},
		{"digest id", sess, []zkproto.Id{alice}, setDataOp("/alice", nil, -1), zkproto.OK},
		{"other digest id", sess, []zkproto.Id{bob}, setDataOp("/alice", nil, -1), zkproto.ErrNoAuth},
		{"config is read-only", sess, nil, setDataOp("/zookeeper/config", nil, -1), zkproto.ErrNoAuth},
		{"bad version", sess, nil, setDataOp("/a", nil, 1), zkproto.ErrBadVersion},
	})
}

func TestSetACL(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	before := stat(t, h.tree, "/a")
	r, trig := h.must(txn.Entry{Session: sess, Auth: []zkproto.Id{alice}, Op: setACLOp("/a", zkproto.CreatorAllACL, 0)})
	want := before
	want.Aversion = 1
	if r.Stat != want || len(trig) != 0 {
		t.Fatalf("setACL stat %+v (want %+v), triggers %v", r.Stat, want, trig)
	}
	if got, _, _ := h.tree.GetACL("/a", []zkproto.Id{alice}); !slices.Equal(got, aliceAll) {
		t.Fatalf("acl %v", got)
	}
	// The same list again keeps the interned set and still bumps aversion.
	r, _ = h.must(txn.Entry{Session: sess, Auth: []zkproto.Id{alice}, Op: setACLOp("/a", aliceAll, 1)})
	if r.Stat.Aversion != 2 || r.Stat.Mzxid != before.Mzxid {
		t.Fatalf("second setACL stat %+v", r.Stat)
	}

	runOpErrorCases(t, []opErrorCase{
		{"ok", sess, nil, setACLOp("/a", zkproto.ReadACLUnsafe, 0), zkproto.OK},
		{"unknown session", 99, nil, setACLOp("/a", zkproto.OpenACLUnsafe, -1), zkproto.ErrSessionExpired},
		{"invalid path", sess, nil, setACLOp("/a/", zkproto.OpenACLUnsafe, -1), zkproto.ErrBadArguments},
		{"invalid acl", sess, nil, setACLOp("/a", []zkproto.ACL{}, -1), zkproto.ErrInvalidACL},
		{"invalid acl before existence", sess, nil, setACLOp("/none", nil, -1), zkproto.ErrInvalidACL},
		{"no node", sess, nil, setACLOp("/none", zkproto.OpenACLUnsafe, -1), zkproto.ErrNoNode},
		{"no admin permission", sess, nil, setACLOp("/noadmin", zkproto.OpenACLUnsafe, -1), zkproto.ErrNoAuth},
		{"bad aversion", sess, nil, setACLOp("/a", zkproto.OpenACLUnsafe, 1), zkproto.ErrBadVersion},
		{"super on config", sess, []zkproto.Id{acl.SuperID}, setACLOp("/zookeeper/config", zkproto.OpenACLUnsafe, -1), zkproto.OK},
	})
}

func TestCheck(t *testing.T) {
	runOpErrorCases(t, []opErrorCase{
		{"ok", sess, nil, checkOp("/a", 0), zkproto.OK},
		{"any version", sess, nil, checkOp("/a", -1), zkproto.OK},
		{"unknown session", 99, nil, checkOp("/a", -1), zkproto.ErrSessionExpired},
		{"invalid path", sess, nil, checkOp("/a/", -1), zkproto.ErrBadArguments},
		{"no node", sess, nil, checkOp("/none", -1), zkproto.ErrNoNode},
		{"no read permission", sess, nil, checkOp("/noread", -1), zkproto.ErrNoAuth},
		{"bad version", sess, nil, checkOp("/a", 3), zkproto.ErrBadVersion},
	})
	h := newHarness(t)
	opsSetup(h)
	if r, trig := h.must(txn.Entry{Session: sess, Op: checkOp("/a", 0)}); r.Path != "" || r.Stat != (zkproto.Stat{}) || trig != nil {
		t.Fatalf("check result %+v, triggers %v", r, trig)
	}
}

func TestNoopAndUnknownKind(t *testing.T) {
	h := newHarness(t)
	before := dump(h.tree)
	if r, trig := h.apply(txn.Entry{Op: txn.Op{Kind: txn.KindNoop}}); r.Err != zkproto.OK || trig != nil {
		t.Fatalf("noop: %+v %v", r, trig)
	}
	if r, _ := h.apply(txn.Entry{Op: txn.Op{Kind: 0}}); r.Err != zkproto.ErrBadArguments {
		t.Fatalf("kind 0: %v", r.Err)
	}
	if dump(h.tree) != before || h.tree.LastZxid() != h.zxid {
		t.Fatalf("noop changed the tree or did not advance LastZxid")
	}
}
