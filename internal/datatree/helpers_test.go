package datatree

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// harness applies entries with increasing zxids and times and checks the
// tree's invariants after every one.
type harness struct {
	t    testing.TB
	tree *Tree
	zxid int64
	now  int64
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, tree: New(), zxid: 0x100000000, now: 1_700_000_000_000}
}

// apply applies e with the next zxid and time (unless e sets a time).
func (h *harness) apply(e txn.Entry) (txn.Result, []Trigger) {
	h.t.Helper()
	h.zxid++
	h.now += 10
	e.Zxid = h.zxid
	if e.Time == 0 {
		e.Time = h.now
	}
	r, trig := h.tree.Apply(&e)
	if h.tree.LastZxid() != e.Zxid {
		h.t.Fatalf("LastZxid = %#x after applying %#x", h.tree.LastZxid(), e.Zxid)
	}
	checkInvariants(h.t, h.tree)
	return r, stripACLs(h.t, trig)
}

// stripACLs checks that every trigger carries its node's ACL (no node
// Giraffe stores has an empty one) and removes it, so that tests can
// compare triggers by type, path and zxid.
func stripACLs(t testing.TB, trig []Trigger) []Trigger {
	t.Helper()
	if trig == nil {
		return nil
	}
	out := make([]Trigger, len(trig))
	for i, tr := range trig {
		if len(tr.ACL) == 0 {
			t.Fatalf("trigger %+v carries no ACL", tr)
		}
		tr.ACL = nil
		out[i] = tr
	}
	return out
}

// equalTriggers compares trigger lists.
func equalTriggers(a, b []Trigger) bool { return reflect.DeepEqual(a, b) }

// must applies e and fails the test unless it succeeds.
func (h *harness) must(e txn.Entry) (txn.Result, []Trigger) {
	h.t.Helper()
	r, trig := h.apply(e)
	if r.Err != zkproto.OK {
		h.t.Fatalf("%s %q: %v", e.Op.Kind, e.Op.Path, r.Err)
	}
	return r, trig
}

func (h *harness) session(id int64) {
	h.t.Helper()
	h.must(txn.Entry{Session: id, Timeout: 30000, Passwd: make([]byte, 16), Op: txn.Op{Kind: txn.KindCreateSession}})
}

// op builders
func createOp(path string, data []byte, flags int32) txn.Op {
	return txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate2, Path: path, Data: data, ACL: zkproto.OpenACLUnsafe, Flags: flags}
}

func createACL(path string, acl []zkproto.ACL) txn.Op {
	return txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate2, Path: path, ACL: acl}
}

func deleteOp(path string, version int32) txn.Op {
	return txn.Op{Kind: txn.KindDelete, OpCode: zkproto.OpDelete, Path: path, Version: version}
}

func setDataOp(path string, data []byte, version int32) txn.Op {
	return txn.Op{Kind: txn.KindSetData, OpCode: zkproto.OpSetData, Path: path, Data: data, Version: version}
}

func setACLOp(path string, acl []zkproto.ACL, version int32) txn.Op {
	return txn.Op{Kind: txn.KindSetACL, OpCode: zkproto.OpSetACL, Path: path, ACL: acl, Version: version}
}

func checkOp(path string, version int32) txn.Op {
	return txn.Op{Kind: txn.KindCheck, OpCode: zkproto.OpCheck, Path: path, Version: version}
}

func multiOp(ops ...txn.Op) txn.Op {
	return txn.Op{Kind: txn.KindMulti, OpCode: zkproto.OpMulti, Ops: ops}
}

func stat(t testing.TB, tr *Tree, path string) zkproto.Stat {
	t.Helper()
	st, code := tr.Exists(path, []zkproto.Id{{Scheme: "super", ID: "test"}})
	if code != zkproto.OK {
		t.Fatalf("stat %q: %v", path, code)
	}
	return st
}

// checkInvariants recomputes from scratch everything the tree maintains
// incrementally and compares.
func checkInvariants(t testing.TB, tr *Tree) {
	t.Helper()
	var digest uint64
	var size int64
	ephemerals := 0
	aclUsers := map[*aclSet]int{}
	for path, n := range tr.nodes {
		if n.pathHash != hashPath(path) || n.dataHash != hashData(n.data) {
			t.Fatalf("%q: stale cached hashes", path)
		}
		if n.digest != nodeDigest(&n.nodeState) {
			t.Fatalf("%q: stale node digest", path)
		}
		digest += n.digest
		size += int64(len(path) + len(n.data))
		aclUsers[n.acl]++
		if path != rootPath {
			parentPath, name, _ := splitPath(path)
			p := tr.nodes[parentPath]
			if p == nil || p.children[name] != n {
				t.Fatalf("%q: not linked from its parent %q", path, parentPath)
			}
		}
		if n.children != nil && len(n.children) == 0 {
			t.Fatalf("%q: empty children map kept", path)
		}
		for name, c := range n.children {
			cp := path + "/" + name
			if path == rootPath {
				cp = "/" + name
			}
			if tr.nodes[cp] != c {
				t.Fatalf("%q: child %q not in the node table", path, name)
			}
		}
		_, inC := tr.containers[path]
		_, inT := tr.ttls[path]
		_, inE := tr.ephemerals[n.owner][path]
		k := ownerKindOf(n.owner)
		if inC != (k == ownerContainer) || inT != (k == ownerTTL) || inE != (k == ownerSession) {
			t.Fatalf("%q: owner %#x indexed as container=%v ttl=%v ephemeral=%v", path, n.owner, inC, inT, inE)
		}
		if k == ownerSession {
			ephemerals++
		}
	}
	for id, s := range tr.sessions {
		if s.digest != sessionDigest(id, s.timeout, s.passwd) {
			t.Fatalf("session %#x: stale digest", id)
		}
		digest += s.digest
	}
	if digest != tr.digest {
		t.Fatalf("digest %#x, recomputed %#x", tr.digest, digest)
	}
	if size != tr.dataSize {
		t.Fatalf("data size %d, recomputed %d", tr.dataSize, size)
	}
	if ephemerals != tr.ephemeralCount {
		t.Fatalf("ephemeral count %d, recomputed %d", tr.ephemeralCount, ephemerals)
	}
	n := 0
	for owner, set := range tr.ephemerals {
		if len(set) == 0 {
			t.Fatalf("empty ephemeral set kept for %#x", owner)
		}
		n += len(set)
	}
	if n != ephemerals || len(tr.containers)+len(tr.ttls) > len(tr.nodes) {
		t.Fatalf("owner indexes hold stale paths")
	}
	for s, users := range aclUsers {
		if s.refs != users {
			t.Fatalf("ACL set %v: refs %d, users %d", s.list, s.refs, users)
		}
		found := false
		for c := tr.acls.sets[s.hash]; c != nil; c = c.next {
			found = found || c == s
		}
		if !found {
			t.Fatalf("ACL set %v in use but not interned", s.list)
		}
	}
	if aclCount(&tr.acls) != len(aclUsers) {
		t.Fatalf("%d ACL sets interned, %d in use", aclCount(&tr.acls), len(aclUsers))
	}
	if len(tr.undo) != 0 || tr.logging {
		t.Fatalf("undo log left behind")
	}
	checkSubtrees(t, tr)
}

// checkSubtrees recomputes every top-level subtree's account from the
// nodes: each node points at the account of its top-level name, whose
// digest and count are its nodes', and the accounts and the sessions add
// up to the tree digest.
func checkSubtrees(t testing.TB, tr *Tree) {
	t.Helper()
	digests, counts := map[string]uint64{}, map[string]int{}
	for path, n := range tr.nodes {
		name := topName(path)
		if n.top == nil || n.top.name != name || tr.tops[name] != n.top {
			t.Fatalf("%q: not accounted in subtree %q", path, name)
		}
		digests[name] += n.digest
		counts[name]++
	}
	sum := uint64(0)
	for name, s := range tr.tops {
		if s.digest != digests[name] || s.nodes != counts[name] || s.nodes == 0 {
			t.Fatalf("subtree %q: digest %#x, %d nodes; recomputed %#x, %d", name, s.digest, s.nodes, digests[name], counts[name])
		}
		if s.lastZxid > tr.lastZxid {
			t.Fatalf("subtree %q: last zxid %#x after the tree's %#x", name, s.lastZxid, tr.lastZxid)
		}
		sum += s.digest
	}
	for _, s := range tr.sessions {
		sum += s.digest
	}
	if sum != tr.digest || len(tr.touched) != 0 {
		t.Fatalf("subtree digests and sessions add up to %#x, tree digest %#x; %d touched left", sum, tr.digest, len(tr.touched))
	}
}

// dump renders every node and session (with super rights) and the counters,
// for comparing trees; it leaves out LastZxid, which every entry changes,
// and the digest, which tests compare on its own.
func dump(tr *Tree) string {
	var b strings.Builder
	super := []zkproto.Id{{Scheme: "super"}}
	var walk func(p string)
	walk = func(p string) {
		data, st, _ := tr.GetData(p, super)
		acl, _, _ := tr.GetACL(p, super)
		fmt.Fprintf(&b, "%s data=%q nil=%v %+v acl=%v\n", p, data, data == nil, st, acl)
		kids, _, _ := tr.Children(p, super)
		for _, k := range kids {
			if p == "/" {
				walk("/" + k)
			} else {
				walk(p + "/" + k)
			}
		}
	}
	walk("/")
	for _, s := range tr.Sessions() {
		fmt.Fprintf(&b, "session %#x %d %x eph=%v\n", s.ID, s.Timeout, s.Passwd, tr.Ephemerals(s.ID, ""))
	}
	fmt.Fprintf(&b, "nodes=%d size=%d eph=%d\n", tr.NodeCount(), tr.ApproximateDataSize(), tr.EphemeralCount())
	return b.String()
}

// aclCount returns the number of distinct ACL lists interned.
func aclCount(at *aclTable) int { return len(at.all()) }
