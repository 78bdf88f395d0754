package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestCreateSession(t *testing.T) {
	h := newHarness(t)
	passwd := []byte("0123456789abcdef")
	d0 := h.tree.Digest()
	h.must(txn.Entry{Session: sess, Timeout: 4000, Passwd: passwd, Op: txn.Op{Kind: txn.KindCreateSession}})
	passwd[0] = 'X' // the tree keeps its own copy
	si, ok := h.tree.Session(sess)
	if !ok || si.ID != sess || si.Timeout != 4000 || string(si.Passwd) != "0123456789abcdef" {
		t.Fatalf("session = %+v, %v", si, ok)
	}
	if h.tree.Digest() == d0 {
		t.Fatalf("a new session does not change the digest")
	}
	si.Passwd[0] = 'Y' // nor does it share it with callers
	if si2, _ := h.tree.Session(sess); si2.Passwd[0] != '0' {
		t.Fatalf("Session shares the password")
	}
	for _, id := range []int64{sess, 0, zkproto.ContainerOwner, zkproto.ExtendedOwnerMask | 5, -1} {
		if r, _ := h.apply(txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCreateSession}}); r.Err != zkproto.ErrBadArguments {
			t.Errorf("createSession %#x: %v, want BADARGUMENTS", id, r.Err)
		}
	}
	h.session(3)
	h.session(-0x7000000000000000) // negative ids are fine
	var ids []int64
	for _, s := range h.tree.Sessions() {
		ids = append(ids, s.ID)
	}
	if !slices.Equal(ids, []int64{-0x7000000000000000, 3, sess}) {
		t.Fatalf("Sessions() ids %v", ids)
	}
	if _, ok := h.tree.Session(12345); ok {
		t.Fatalf("unknown session found")
	}
}

func TestCloseSession(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	h.session(sess2)
	h.must(txn.Entry{Session: sess, Op: createOp("/p", nil, zkproto.ModePersistent)})
	h.must(txn.Entry{Session: sess, Op: createOp("/p/e2", nil, zkproto.ModeEphemeral)})
	h.must(txn.Entry{Session: sess, Op: createOp("/e1", nil, zkproto.ModeEphemeral)})
	h.must(txn.Entry{Session: sess2, Op: createOp("/other", nil, zkproto.ModeEphemeral)})
	h.must(txn.Entry{Session: sess, Op: createOp("/p/e3", nil, zkproto.ModeEphemeralSequential)})
	if h.tree.EphemeralCount() != 4 {
		t.Fatalf("ephemeral count %d", h.tree.EphemeralCount())
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", []string{"/e1", "/p/e2", "/p/e30000000001"}},
		{" / ", []string{"/e1", "/p/e2", "/p/e30000000001"}},
		{"/p", []string{"/p/e2", "/p/e30000000001"}},
		{"/p/e3", []string{"/p/e30000000001"}},
		{"/e", []string{"/e1"}},
		{"/x", []string{}},
	} {
		if got := h.tree.Ephemerals(sess, tc.prefix); !slices.Equal(got, tc.want) {
			t.Errorf("Ephemerals(%q) = %v, want %v", tc.prefix, got, tc.want)
		}
	}

	pBefore := stat(t, h.tree, "/p")
	r, trig := h.must(txn.Entry{Session: sess, Op: txn.Op{Kind: txn.KindCloseSession}})
	z := h.zxid
	if r.Err != zkproto.OK {
		t.Fatal(r.Err)
	}
	want := []Trigger{
		{zkproto.EventNodeDeleted, "/e1", z, nil}, {zkproto.EventNodeChildrenChanged, "/", z, nil},
		{zkproto.EventNodeDeleted, "/p/e2", z, nil}, {zkproto.EventNodeChildrenChanged, "/p", z, nil},
		{zkproto.EventNodeDeleted, "/p/e30000000001", z, nil}, {zkproto.EventNodeChildrenChanged, "/p", z, nil},
	}
	if !equalTriggers(trig, want) {
		t.Fatalf("triggers\n got %v\nwant %v", trig, want)
	}
	p := stat(t, h.tree, "/p")
	if p.Pzxid != z || p.NumChildren != 0 || p.Cversion != pBefore.Cversion+2 {
		t.Fatalf("/p after close: %+v (before %+v)", p, pBefore)
	}
	if _, ok := h.tree.Session(sess); ok || h.tree.EphemeralCount() != 1 || len(h.tree.Ephemerals(sess, "")) != 0 {
		t.Fatalf("session or its ephemerals survive the close")
	}
	// The closed session can do nothing more, not even close again.
	for _, op := range []txn.Op{createOp("/x", nil, 0), setDataOp("/p", nil, -1), {Kind: txn.KindCloseSession}} {
		if r, _ := h.apply(txn.Entry{Session: sess, Op: op}); r.Err != zkproto.ErrSessionExpired {
			t.Errorf("%s after close: %v", op.Kind, r.Err)
		}
	}
	if _, code := h.tree.Exists("/other", nil); code != zkproto.OK {
		t.Fatalf("another session's ephemeral was deleted")
	}
}
