package datatree

import (
	"bytes"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// quotaStats returns /zookeeper/quota/hq/zookeeper_stats' data.
func quotaStats(t *testing.T, tr *Tree) string {
	t.Helper()
	data, _, code := tr.GetData("/zookeeper/quota/hq/zookeeper_stats", nil)
	if code != zkproto.OK {
		t.Fatalf("stats node: %v", code)
	}
	return string(data)
}

// TestQuotaStats: creating a quota the way zkCli's setquota does (the
// limits node, then a stats node the tree fills with the subtree's
// figures) makes every create, setData and delete under it, a multi's
// included, change the stats, in the digest, with the stats node's Stat
// unchanged; a rolled-back multi leaves them; a snapshot keeps them; a
// deleted limits node ends the accounting.
func TestQuotaStats(t *testing.T) {
	h := newHarness(t)
	h.session(1)
	must := func(op txn.Op) { h.t.Helper(); h.must(txn.Entry{Session: 1, Op: op}) }
	must(createOp("/hq", []byte("ab"), 0))
	must(createOp("/hq/pre", []byte("x"), 0))
	must(createOp("/zookeeper/quota/hq", nil, 0))
	must(createOp("/zookeeper/quota/hq/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2"), 0))
	must(createOp("/zookeeper/quota/hq/zookeeper_stats", []byte("count=0,bytes=0"), 0))
	if got := quotaStats(t, h.tree); got != "count=2,bytes=3" {
		t.Fatalf("stats at creation: %q", got)
	}
	before := stat(t, h.tree, "/zookeeper/quota/hq/zookeeper_stats")
	must(createOp("/hq/a", []byte("12345"), 0))
	must(setDataOp("/hq/a", []byte("1234567"), -1))
	must(createOp("/other", []byte("zzz"), 0))
	if got := quotaStats(t, h.tree); got != "count=3,bytes=10" {
		t.Fatalf("after create and setData: %q", got)
	}
	after := stat(t, h.tree, "/zookeeper/quota/hq/zookeeper_stats")
	if after.Version != before.Version || after.Mzxid != before.Mzxid {
		t.Fatalf("the stats node's Stat changed: %+v -> %+v", before, after)
	}
	must(multiOp(createOp("/hq/b", nil, 0), deleteOp("/hq/pre", -1)))
	if got := quotaStats(t, h.tree); got != "count=3,bytes=9" {
		t.Fatalf("after a multi: %q", got)
	}
	if r, _ := h.apply(txn.Entry{Session: 1, Op: multiOp(createOp("/hq/c", []byte("1"), 0), deleteOp("/nope", -1))}); r.Err == zkproto.OK && r.Multi == nil {
		t.Fatal("a failing multi succeeded")
	}
	if got := quotaStats(t, h.tree); got != "count=3,bytes=9" {
		t.Fatalf("after a failed multi: %q", got)
	}
	// Another entry with the session's ephemeral: closing it counts.
	h.session(2)
	h.must(txn.Entry{Session: 2, Op: createOp("/hq/e", []byte("e"), zkproto.ModeEphemeral)})
	h.must(txn.Entry{Session: 2, Op: txn.Op{Kind: txn.KindCloseSession}})
	if got := quotaStats(t, h.tree); got != "count=3,bytes=9" {
		t.Fatalf("after an ephemeral came and went: %q", got)
	}

	snap := snapshotBytes(t, h.tree)
	b, err := ReadSnapshot(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	if quotaStats(t, b) != quotaStats(t, h.tree) || b.Digest() != h.tree.Digest() {
		t.Fatal("the snapshot changed the stats")
	}
	h.tree = b
	must(createOp("/hq/d", nil, 0))
	if got := quotaStats(t, h.tree); got != "count=4,bytes=9" {
		t.Fatalf("after a create on the restored tree: %q", got)
	}
	must(deleteOp("/zookeeper/quota/hq/zookeeper_limits", -1))
	must(createOp("/hq/f", nil, 0))
	if got := quotaStats(t, h.tree); got != "count=4,bytes=9" {
		t.Fatalf("the stats changed after the limits node went: %q", got)
	}
	if r := h.tree.QuotaRoot("/hq/f"); r != "" {
		t.Fatalf("QuotaRoot without a limits node: %q", r)
	}
}
