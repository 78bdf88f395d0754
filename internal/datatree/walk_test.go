package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestWalk visits every node once, parents first and children by name,
// with its data, stat and ACL, whatever the ACL allows, and stops when
// told to.
func TestWalk(t *testing.T) {
	h := newHarness(t)
	h.session(1)
	secret := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "ip", ID: "10.0.0.1"}}}
	h.must(txn.Entry{Session: 1, Op: createACL("/b", secret)})
	h.must(txn.Entry{Session: 1, Op: createOp("/a", nil, 0)})
	h.must(txn.Entry{Session: 1, Op: createOp("/a/z", nil, 0)})
	h.must(txn.Entry{Session: 1, Op: createOp("/a/y", []byte("y"), 0)})
	var paths []string
	h.tree.Walk(func(path string, data []byte, st zkproto.Stat, acl []zkproto.ACL) bool {
		paths = append(paths, path)
		if path == "/a/y" && (string(data) != "y" || st.Czxid != h.zxid || st.DataLength != 1) {
			t.Errorf("/a/y: %q %+v", data, st)
		}
		if (path == "/a" && st.NumChildren != 2) || (path == "/b" && !slices.Equal(acl, secret)) {
			t.Errorf("%s: %+v %v", path, st, acl)
		}
		return true
	})
	want := []string{"/", "/a", "/a/y", "/a/z", "/b", "/zookeeper", "/zookeeper/config", "/zookeeper/quota"}
	if !slices.Equal(paths, want) {
		t.Fatalf("Walk visited %v, want %v", paths, want)
	}
	n := 0
	h.tree.Walk(func(string, []byte, zkproto.Stat, []zkproto.ACL) bool { n++; return n < 3 })
	if n != 3 {
		t.Fatalf("Walk went on after false: %d calls", n)
	}
}
