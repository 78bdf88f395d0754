package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestReapCandidates(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	container := func(p string) txn.Op {
		o := createOp(p, nil, zkproto.ModeContainer)
		o.OpCode = zkproto.OpCreateContainer
		return o
	}
	ttl := func(p string, ms int64) txn.Op {
		o := createOp(p, nil, zkproto.ModePersistentWithTTL)
		o.OpCode, o.TTL = zkproto.OpCreateTTL, ms
		return o
	}
	h.must(txn.Entry{Session: sess, Op: container("/used")})
	h.must(txn.Entry{Session: sess, Op: createOp("/used/x", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: deleteOp("/used/x", -1)})
	h.must(txn.Entry{Session: sess, Op: container("/never")})
	h.must(txn.Entry{Session: sess, Op: container("/busy")})
	h.must(txn.Entry{Session: sess, Op: createOp("/busy/x", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: createOp("/plain", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: createOp("/plain/x", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: deleteOp("/plain/x", -1)})
	h.must(txn.Entry{Session: sess, Time: 1000, Op: ttl("/t1", 100)})
	h.must(txn.Entry{Session: sess, Time: 1000, Op: ttl("/t2", 500)})
	h.must(txn.Entry{Session: sess, Time: 1000, Op: ttl("/tbusy", 100)})
	h.must(txn.Entry{Session: sess, Op: createOp("/tbusy/x", nil, 0)})

	for _, tc := range []struct {
		now  int64
		want []string
	}{
		{1000, []string{"/used"}},
		{1100, []string{"/used"}}, // elapsed must exceed the TTL
		{1101, []string{"/t1", "/used"}},
		{1501, []string{"/t1", "/t2", "/used"}},
	} {
		if got := h.tree.ReapCandidates(tc.now); !slices.Equal(got, tc.want) {
			t.Errorf("ReapCandidates(%d) = %v, want %v", tc.now, got, tc.want)
		}
	}

	// A setData refreshes a TTL node's mtime.
	h.must(txn.Entry{Session: sess, Time: 1050, Op: setDataOp("/t1", nil, -1)})
	if got := h.tree.ReapCandidates(1101); slices.Contains(got, "/t1") {
		t.Errorf("a touched TTL node is a candidate: %v", got)
	}

	del := func(p string, now int64) zkproto.Code {
		r, _ := h.apply(txn.Entry{Time: now, Op: txn.Op{Kind: txn.KindDeleteContainer, Path: p}})
		return r.Err
	}
	for _, tc := range []struct {
		path string
		now  int64
		want zkproto.Code
	}{
		{"/busy", 5000, zkproto.ErrNotEmpty},
		{"/plain", 5000, zkproto.ErrBadVersion}, // not a container
		{"/t2", 1200, zkproto.ErrBadVersion},    // not expired at the entry's time
		{"/none", 5000, zkproto.ErrNoNode},
		{"/zookeeper", 5000, zkproto.ErrBadArguments},
		{"/", 5000, zkproto.ErrBadArguments},
		{"nope", 5000, zkproto.ErrBadArguments},
		{"/used", 5000, zkproto.OK},
		{"/never", 5000, zkproto.OK}, // a container, whatever its history
		{"/t2", 1501, zkproto.OK},
	} {
		if got := del(tc.path, tc.now); got != tc.want {
			t.Errorf("deleteContainer %s at %d = %v, want %v", tc.path, tc.now, got, tc.want)
		}
	}
	eph := createOp("/eph", nil, zkproto.ModeEphemeral)
	h.must(txn.Entry{Session: sess, Op: eph})
	if got := del("/eph", 5000); got != zkproto.ErrBadVersion {
		t.Errorf("deleteContainer of an ephemeral = %v", got)
	}
	_, trig := h.must(txn.Entry{Time: 5000, Op: txn.Op{Kind: txn.KindDeleteContainer, Path: "/t1"}})
	if !equalTriggers(trig, []Trigger{{zkproto.EventNodeDeleted, "/t1", h.zxid, nil}, {zkproto.EventNodeChildrenChanged, "/", h.zxid, nil}}) {
		t.Errorf("deleteContainer triggers %v", trig)
	}
}
