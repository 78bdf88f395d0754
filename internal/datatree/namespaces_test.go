package datatree

import (
	"bytes"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func table(t testing.TB, decls ...string) nsmap.Table {
	t.Helper()
	var tab nsmap.Table
	for i := 0; i < len(decls); i += 2 {
		l, err := nsmap.ParseLevel(decls[i+1])
		if err != nil {
			t.Fatal(err)
		}
		if err := tab.Declare(decls[i], l); err != nil {
			t.Fatal(err)
		}
	}
	return tab
}

func declare(tab nsmap.Table) txn.Entry {
	return txn.Entry{Op: txn.Op{Kind: txn.KindNamespaces, Data: tab.Encode()}}
}

func TestDeclareNamespacesOnAFreshTree(t *testing.T) {
	h := newHarness(t)
	tab := table(t, "1", "strong", "2", "weak")
	if !h.tree.Declares(nsmap.Table{}) || h.tree.Declares(tab) {
		t.Fatal("a fresh tree declares the empty table and no other")
	}
	// No session: the declaration is the ensemble's, not a client's.
	_, trig := h.must(declare(tab))
	z := h.zxid
	want := []Trigger{
		{Type: zkproto.EventNodeCreated, Path: "/1", Zxid: z}, {Type: zkproto.EventNodeChildrenChanged, Path: "/", Zxid: z},
		{Type: zkproto.EventNodeCreated, Path: "/2", Zxid: z}, {Type: zkproto.EventNodeChildrenChanged, Path: "/", Zxid: z},
		{Type: zkproto.EventNodeCreated, Path: nsmap.ZnodePath, Zxid: z},
		{Type: zkproto.EventNodeChildrenChanged, Path: "/zookeeper", Zxid: z},
	}
	if !equalTriggers(trig, want) {
		t.Fatalf("triggers %+v, want %+v", trig, want)
	}
	if !h.tree.Declares(tab) || h.tree.Declares(nsmap.Table{}) {
		t.Fatal("the tree does not declare what was applied")
	}
	for _, p := range []string{"/1", "/2"} {
		st := stat(t, h.tree, p)
		if st.Czxid != z || st.Mzxid != z || st.Ctime != h.now || st.EphemeralOwner != 0 || st.DataLength != 0 {
			t.Fatalf("%s: stat %+v", p, st)
		}
		acl, _, _ := h.tree.GetACL(p, nil)
		if len(acl) != 1 || acl[0] != zkproto.OpenACLUnsafe[0] {
			t.Fatalf("%s: ACL %v", p, acl)
		}
	}
	data, st, code := h.tree.GetData(nsmap.ZnodePath, nil)
	if code != zkproto.OK || string(data) != `{"1":"strong","2":"weak"}` || st.Czxid != z {
		t.Fatalf("published table: %q %+v %v", data, st, code)
	}
	acl, _, _ := h.tree.GetACL(nsmap.ZnodePath, nil)
	if len(acl) != 1 || acl[0] != zkproto.ReadACLUnsafe[0] {
		t.Fatalf("published table's ACL %v", acl)
	}
	// A client cannot write it; the tree refuses by its ACL, as for
	// /zookeeper/config.
	h.session(0x101)
	for _, op := range []txn.Op{setDataOp(nsmap.ZnodePath, []byte("{}"), -1),
		setACLOp(nsmap.ZnodePath, zkproto.OpenACLUnsafe, -1), createOp(nsmap.ZnodePath+"/x", nil, 0)} {
		if r, _ := h.apply(txn.Entry{Session: 0x101, Op: op}); r.Err != zkproto.ErrNoAuth {
			t.Fatalf("%s of the published table: %v, want NOAUTH", op.Kind, r.Err)
		}
	}
}

func TestDeclareNamespacesTwiceChangesNothing(t *testing.T) {
	h := newHarness(t)
	tab := table(t, "2", "weak")
	h.must(declare(tab))
	before, digest := dump(h.tree), h.tree.Digest()
	if _, trig := h.must(declare(tab)); trig != nil {
		t.Fatalf("a repeated declaration fired %+v", trig)
	}
	if dump(h.tree) != before || h.tree.Digest() != digest {
		t.Fatal("a repeated declaration changed the tree")
	}
}

func TestDeclareNamespacesKeepsWhatExists(t *testing.T) {
	h := newHarness(t)
	h.session(0x101)
	h.must(txn.Entry{Session: 0x101, Op: createOp("/2", []byte("mine"), zkproto.ModePersistent)})
	h.must(txn.Entry{Session: 0x101, Op: createOp("/2/child", nil, zkproto.ModePersistent)})
	h.must(txn.Entry{Session: 0x101, Op: createOp("/1", []byte("eph"), zkproto.ModeEphemeral)})
	h.must(txn.Entry{Session: 0x101, Op: txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreateContainer,
		Path: "/3", ACL: zkproto.OpenACLUnsafe, Flags: zkproto.ModeContainer}})
	h.must(txn.Entry{Session: 0x101, Op: createOp("/3/c", nil, zkproto.ModePersistent)})
	h.must(txn.Entry{Session: 0x101, Op: deleteOp("/3/c", -1)})
	if c := h.tree.ReapCandidates(h.now); len(c) != 1 {
		t.Fatalf("reap candidates before the declaration: %v", c)
	}
	before := stat(t, h.tree, "/2")
	h.must(declare(table(t, "1", "strong", "2", "weak", "3", "weak")))
	if after := stat(t, h.tree, "/2"); after != before {
		t.Fatalf("an existing root changed: %+v, was %+v", after, before)
	}
	if data, _, _ := h.tree.GetData("/2", nil); string(data) != "mine" {
		t.Fatalf("root data %q", data)
	}
	// The ephemeral root is now persistent: the session's end leaves it.
	if st := stat(t, h.tree, "/1"); st.EphemeralOwner != 0 {
		t.Fatalf("declared root still ephemeral: %+v", st)
	}
	h.must(txn.Entry{Session: 0x101, Op: txn.Op{Kind: txn.KindCloseSession}})
	stat(t, h.tree, "/1")
	// The container root is no reap candidate, however empty.
	if c := h.tree.ReapCandidates(h.now + 1_000_000); len(c) != 0 {
		t.Fatalf("reap candidates %v", c)
	}
}

func TestDeclareNamespacesChangesTheTable(t *testing.T) {
	h := newHarness(t)
	h.must(declare(table(t, "2", "weak")))
	h.must(declare(table(t, "1", "strong", "2", "strong")))
	z := h.zxid
	data, st, _ := h.tree.GetData(nsmap.ZnodePath, nil)
	if string(data) != `{"1":"strong","2":"strong"}` || st.Version != 1 || st.Mzxid != z {
		t.Fatalf("published table after a change: %q %+v", data, st)
	}
	stat(t, h.tree, "/1")
	// Declaring none keeps the roots, as ordinary znodes, and publishes {}.
	none := nsmap.Table{}
	h.must(declare(none))
	if data, _, _ := h.tree.GetData(nsmap.ZnodePath, nil); string(data) != "{}" {
		t.Fatalf("published table after undeclaring: %q", data)
	}
	stat(t, h.tree, "/2")
	if !h.tree.Declares(none) {
		t.Fatal("a tree publishing {} does not declare the empty table")
	}
}

func TestDeclaresLeavesAClientsNodeAlone(t *testing.T) {
	h := newHarness(t)
	h.session(0x101)
	h.must(txn.Entry{Session: 0x101, Op: createOp(nsmap.ZnodePath, []byte("not a table"), zkproto.ModePersistent)})
	if !h.tree.Declares(nsmap.Table{}) {
		t.Fatal("a client's own node at the table's path counts as a declaration")
	}
	h.must(txn.Entry{Session: 0x101, Op: setDataOp(nsmap.ZnodePath, []byte(`{"x":"weak"}`), -1)})
	if h.tree.Declares(nsmap.Table{}) {
		t.Fatal("a node reading as a table is not seen")
	}
	// A declaration takes the node over.
	h.must(declare(table(t, "x", "weak")))
	if !h.tree.Declares(table(t, "x", "weak")) {
		t.Fatal("declaration over a client's node")
	}
}

func TestDeclareNamespacesRefusesABadTable(t *testing.T) {
	h := newHarness(t)
	before := dump(h.tree)
	for _, data := range []string{"", "[]", `{"a/b":"weak"}`, `{"1":"eventual"}`} {
		e := txn.Entry{Op: txn.Op{Kind: txn.KindNamespaces, Data: []byte(data)}}
		if r, _ := h.apply(e); r.Err != zkproto.ErrBadArguments {
			t.Fatalf("declaration %q: %v", data, r.Err)
		}
	}
	if dump(h.tree) != before {
		t.Fatal("a refused declaration changed the tree")
	}
}

func TestDeclaredTreeSnapshotRoundTrip(t *testing.T) {
	h := newHarness(t)
	tab := table(t, "1", "strong", "2", "weak")
	h.must(declare(tab))
	h.session(0x101)
	h.must(txn.Entry{Session: 0x101, Op: createOp("/2/a", []byte("x"), zkproto.ModePersistent)})
	snap := snapshotBytes(t, h.tree)
	back, err := ReadSnapshot(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, back)
	if back.Digest() != h.tree.Digest() || dump(back) != dump(h.tree) || !back.Declares(tab) {
		t.Fatalf("restored tree differs\n%s\n%s", dump(h.tree), dump(back))
	}
}
