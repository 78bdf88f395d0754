package datatree

import (
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestGateHoldsBackEntries checks that an entry the gate refuses changes
// nothing, fails with DATAINCONSISTENCY and still advances LastZxid, and
// that the entries it admits apply as usual.
func TestGateHoldsBackEntries(t *testing.T) {
	h := newHarness(t)
	h.session(1)
	h.must(txn.Entry{Session: 1, Op: createOp("/a", nil, 0)})
	h.must(txn.Entry{Session: 1, Op: createOp("/b", nil, 0)})
	frozen := func(e *txn.Entry) bool {
		if e.Op.Kind == txn.KindMulti {
			for _, o := range e.Op.Ops {
				if strings.HasPrefix(o.Path, "/b") {
					return false
				}
			}
			return true
		}
		return !strings.HasPrefix(e.Op.Path, "/b")
	}
	h.tree.SetGate(frozen)
	before := h.tree.Digest()
	for _, op := range []txn.Op{
		createOp("/b/x", []byte("v"), 0),
		setDataOp("/b", []byte("v"), -1),
		multiOp(createOp("/a/y", nil, 0), deleteOp("/b", -1)),
	} {
		r, trig := h.apply(txn.Entry{Session: 1, Op: op})
		if r.Err != zkproto.ErrDataInconsistency || trig != nil {
			t.Fatalf("%s held back: %v, %v", op.Kind, r.Err, trig)
		}
	}
	if h.tree.Digest() != before {
		t.Fatal("an entry held back changed the tree")
	}
	if _, code := h.tree.Exists("/a/y", nil); code != zkproto.ErrNoNode {
		t.Fatal("a held-back multi applied one of its ops")
	}
	h.must(txn.Entry{Session: 1, Op: createOp("/a/z", nil, 0)})
	if c := h.tree.CloneSubtrees([]string{"/b"}); c.gate != nil {
		t.Fatal("a clone inherited the gate")
	}
}
