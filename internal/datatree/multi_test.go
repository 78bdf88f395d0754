package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func codes(rs []txn.Result) []zkproto.Code {
	out := make([]zkproto.Code, len(rs))
	for i, r := range rs {
		out[i] = r.Err
	}
	return out
}

func TestMultiSuccess(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	r, trig := h.must(txn.Entry{Session: sess, Op: multiOp(
		checkOp("/a", 0),
		createOp("/m", []byte("x"), zkproto.ModePersistent),
		createOp("/m/s-", nil, zkproto.ModePersistentSequential),
		createOp("/m/s-", nil, zkproto.ModeEphemeralSequential),
		setDataOp("/m", []byte("yz"), 0), // sees the create before it
		checkOp("/m", 1),
		deleteOp("/a/b", -1),
	)})
	z := h.zxid
	if r.Err != zkproto.OK || len(r.Multi) != 7 {
		t.Fatalf("multi: %v %v", r.Err, codes(r.Multi))
	}
	if r.Multi[1].Path != "/m" || r.Multi[2].Path != "/m/s-0000000000" || r.Multi[3].Path != "/m/s-0000000001" {
		t.Fatalf("created paths %q %q %q", r.Multi[1].Path, r.Multi[2].Path, r.Multi[3].Path)
	}
	if r.Multi[4].Stat.Version != 1 || r.Multi[4].Stat.DataLength != 2 || r.Multi[4].Stat.Czxid != z {
		t.Fatalf("setData in multi: %+v", r.Multi[4].Stat)
	}
	want := []Trigger{
		{zkproto.EventNodeCreated, "/m", z, nil}, {zkproto.EventNodeChildrenChanged, "/", z, nil},
		{zkproto.EventNodeCreated, "/m/s-0000000000", z, nil}, {zkproto.EventNodeChildrenChanged, "/m", z, nil},
		{zkproto.EventNodeCreated, "/m/s-0000000001", z, nil}, {zkproto.EventNodeChildrenChanged, "/m", z, nil},
		{zkproto.EventNodeDataChanged, "/m", z, nil},
		{zkproto.EventNodeDeleted, "/a/b", z, nil}, {zkproto.EventNodeChildrenChanged, "/a", z, nil},
	}
	if !equalTriggers(trig, want) {
		t.Fatalf("triggers\n got %v\nwant %v", trig, want)
	}
	if got := h.tree.Ephemerals(sess, ""); !slices.Equal(got, []string{"/m/s-0000000001"}) {
		t.Fatalf("ephemerals %v", got)
	}
	// An empty multi succeeds with no results.
	r, trig = h.must(txn.Entry{Session: sess, Op: multiOp()})
	if r.Multi == nil || len(r.Multi) != 0 || trig != nil {
		t.Fatalf("empty multi: %+v %v", r, trig)
	}
}

func TestMultiRollback(t *testing.T) {
	tests := []struct {
		name string
		ops  []txn.Op
		want []zkproto.Code
	}{
		{"first op fails", []txn.Op{checkOp("/a", 9), createOp("/x", nil, 0)},
			[]zkproto.Code{zkproto.ErrBadVersion, zkproto.ErrRuntimeInconsistency}},
		{"create, setData, then fail", []txn.Op{
			createOp("/x", []byte("1"), 0), setDataOp("/a", []byte("changed"), 0),
			createOp("/a/b/s-", nil, zkproto.ModePersistentSequential), createOp("/x", nil, 0), deleteOp("/a/b", -1)},
			[]zkproto.Code{zkproto.OK, zkproto.OK, zkproto.OK, zkproto.ErrNodeExists, zkproto.ErrRuntimeInconsistency}},
		{"delete then fail", []txn.Op{deleteOp("/a/b", -1), deleteOp("/a", -1), checkOp("/a", 0)},
			[]zkproto.Code{zkproto.OK, zkproto.OK, zkproto.ErrNoNode}},
		{"delete a node with a unique ACL, recreate it, fail", []txn.Op{
			deleteOp("/alice", -1), createACL("/alice", aliceAll), createACL("/alice2", aliceAll),
			setDataOp("/alice", nil, -1)},
			[]zkproto.Code{zkproto.OK, zkproto.OK, zkproto.OK, zkproto.ErrNoAuth}},
		{"setData then delete the same node, then fail", []txn.Op{
			setDataOp("/a/b", []byte("v"), 0), deleteOp("/a/b", 1), createOp("/y", nil, 0), checkOp("/y", 1)},
			[]zkproto.Code{zkproto.OK, zkproto.OK, zkproto.OK, zkproto.ErrBadVersion}},
		{"ephemeral then fail", []txn.Op{createOp("/e", nil, zkproto.ModeEphemeral), createOp("/e/x", nil, 0)},
			[]zkproto.Code{zkproto.OK, zkproto.ErrNoChildrenForEphemerals}},
		{"setACL is not a multi op", []txn.Op{createOp("/x", nil, 0), setACLOp("/x", zkproto.OpenACLUnsafe, -1), checkOp("/x", 0)},
			[]zkproto.Code{zkproto.OK, zkproto.ErrBadArguments, zkproto.ErrRuntimeInconsistency}},
		{"nested multi", []txn.Op{multiOp(createOp("/x", nil, 0))},
			[]zkproto.Code{zkproto.ErrBadArguments}},
	}
	for _, tc := range tests {
		h := newHarness(t)
		opsSetup(h)
		before := dump(h.tree)
		r, trig := h.apply(txn.Entry{Session: sess, Op: multiOp(tc.ops...)})
		if !slices.Equal(codes(r.Multi), tc.want) {
			t.Errorf("%s: results %v, want %v", tc.name, codes(r.Multi), tc.want)
			continue
		}
		failed := slices.IndexFunc(tc.want, func(c zkproto.Code) bool { return c != zkproto.OK })
		if r.Err != tc.want[failed] {
			t.Errorf("%s: Err %v, want the failing op's %v", tc.name, r.Err, tc.want[failed])
		}
		for i := 0; i < failed; i++ {
			if r.Multi[i].Path != "" || r.Multi[i].Stat != (zkproto.Stat{}) {
				t.Errorf("%s: op %d before the failure reports %+v", tc.name, i, r.Multi[i])
			}
		}
		if trig != nil {
			t.Errorf("%s: failed multi fired %v", tc.name, trig)
		}
		if after := dump(h.tree); after != before {
			t.Errorf("%s: failed multi changed the tree\nbefore:\n%s\nafter:\n%s", tc.name, before, after)
		}
	}
}

func TestMultiUnknownSession(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	r, _ := h.apply(txn.Entry{Session: 99, Op: multiOp(checkOp("/a", -1), createOp("/x", nil, 0))})
	if !slices.Equal(codes(r.Multi), []zkproto.Code{zkproto.ErrSessionExpired, zkproto.ErrRuntimeInconsistency}) {
		t.Fatalf("results %v", codes(r.Multi))
	}
}
