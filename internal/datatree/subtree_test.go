package datatree

import (
	"bytes"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestSubtreeLastZxid checks which entries move a subtree's last zxid:
// every change to one of its nodes, setACL included, and nothing that
// leaves it as it was (a failed op, a rolled-back multi, a change
// elsewhere).
func TestSubtreeLastZxid(t *testing.T) {
	h := newHarness(t)
	h.session(1)
	last := func(name string) int64 {
		t.Helper()
		s, ok := h.tree.Subtree(name)
		if !ok {
			t.Fatalf("no subtree %q", name)
		}
		return s.LastZxid
	}
	h.must(txn.Entry{Session: 1, Op: createOp("/a", nil, 0)})
	h.must(txn.Entry{Session: 1, Op: createOp("/b", nil, 0)})
	created := last("a")
	if root := last(""); root != h.zxid {
		t.Fatalf(`"/" last changed at %#x, want %#x (a child was created)`, root, h.zxid)
	}

	h.must(txn.Entry{Session: 1, Op: createOp("/b/x", nil, 0)})
	if got := last("a"); got != created {
		t.Fatalf("a change under /b moved /a to %#x", got)
	}
	if r, _ := h.apply(txn.Entry{Session: 1, Op: setDataOp("/a", nil, 7)}); r.Err != zkproto.ErrBadVersion {
		t.Fatalf("setData with a wrong version: %v", r.Err)
	}
	if r, _ := h.apply(txn.Entry{Session: 1, Op: multiOp(createOp("/a/y", nil, 0), checkOp("/a", 9))}); r.Err == zkproto.OK {
		t.Fatal("a multi with a failing check succeeded")
	}
	if got := last("a"); got != created {
		t.Fatalf("failed writes moved /a to %#x", got)
	}
	h.must(txn.Entry{Session: 1, Op: setACLOp("/a", zkproto.ReadACLUnsafe, -1)})
	if got := last("a"); got != h.zxid {
		t.Fatalf("setACL left /a at %#x, want %#x", got, h.zxid)
	}
	h.must(txn.Entry{Session: 1, Op: deleteOp("/b/x", -1)})
	h.must(txn.Entry{Session: 1, Op: deleteOp("/b", -1)})
	if _, ok := h.tree.Subtree("b"); ok {
		t.Fatal("the account of a deleted top-level node is kept")
	}
}

// TestSubtreeDigestsAcrossSnapshot checks that a tree read from a
// snapshot has the same subtree digests and counts, and that every
// subtree starts at the snapshot's zxid.
func TestSubtreeDigestsAcrossSnapshot(t *testing.T) {
	h := newHarness(t)
	h.session(1)
	for _, p := range []string{"/a", "/a/1", "/a/2", "/b", "/b/1"} {
		h.must(txn.Entry{Session: 1, Op: createOp(p, []byte(p), 0)})
	}
	var buf bytes.Buffer
	if err := h.tree.WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, back)
	for _, name := range []string{"", "zookeeper", "a", "b"} {
		want, _ := h.tree.Subtree(name)
		got, ok := back.Subtree(name)
		if !ok || got.Digest != want.Digest || got.Nodes != want.Nodes || got.LastZxid != h.zxid {
			t.Fatalf("subtree %q: read back %+v, written %+v (snapshot at %#x)", name, got, want, h.zxid)
		}
	}
	if a, _ := back.Subtree("a"); a.Nodes != 3 {
		t.Fatalf("/a holds %d nodes, want 3", a.Nodes)
	}
}
