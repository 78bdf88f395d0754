package datatree

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestReads(t *testing.T) {
	h := newHarness(t)
	opsSetup(h)
	h.must(txn.Entry{Session: sess, Op: createOp("/a/c", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: createOp("/a/c/d", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: createOp("/a/0", nil, 0)})
	tr := h.tree

	if d, st, code := tr.GetData("/a", nil); code != zkproto.OK || string(d) != "a" || st != stat(t, tr, "/a") {
		t.Errorf("GetData /a = %q %+v %v", d, st, code)
	}
	if kids, st, code := tr.Children("/a", nil); code != zkproto.OK || !slices.Equal(kids, []string{"0", "b", "c"}) || st.NumChildren != 3 {
		t.Errorf("Children /a = %v %+v %v", kids, st, code)
	}
	if kids, _, code := tr.Children("/a/b", nil); code != zkproto.OK || kids == nil || len(kids) != 0 {
		t.Errorf("Children of a leaf = %v (nil %v), %v", kids, kids == nil, code)
	}
	if n, code := tr.AllChildrenNumber("/a", nil); code != zkproto.OK || n != 4 {
		t.Errorf("AllChildrenNumber /a = %d %v", n, code)
	}
	if n, code := tr.AllChildrenNumber("/", nil); code != zkproto.OK || int(n) != tr.NodeCount()-1 {
		t.Errorf("AllChildrenNumber / = %d %v", n, code)
	}
	if n, _ := tr.AllChildrenNumber("/zookeeper", nil); n != 2 {
		t.Errorf("AllChildrenNumber /zookeeper = %d", n)
	}

	type read func(path string, ids []zkproto.Id) zkproto.Code
	reads := map[string]read{
		"GetData":           func(p string, ids []zkproto.Id) zkproto.Code { _, _, c := tr.GetData(p, ids); return c },
		"Exists":            func(p string, ids []zkproto.Id) zkproto.Code { _, c := tr.Exists(p, ids); return c },
		"Children":          func(p string, ids []zkproto.Id) zkproto.Code { _, _, c := tr.Children(p, ids); return c },
		"AllChildrenNumber": func(p string, ids []zkproto.Id) zkproto.Code { _, c := tr.AllChildrenNumber(p, ids); return c },
	}
	for name, rd := range reads {
		for _, tc := range []struct {
			path string
			ids  []zkproto.Id
			want zkproto.Code
		}{
			{"/none", nil, zkproto.ErrNoNode},
			{"/noread", nil, zkproto.ErrNoAuth},
			{"/noread", []zkproto.Id{{Scheme: "super", ID: "admin"}}, zkproto.OK},
			{"/alice", []zkproto.Id{alice}, zkproto.OK},
			{"/alice", []zkproto.Id{bob}, zkproto.ErrNoAuth},
			{"/noadmin", nil, zkproto.OK},
		} {
			if got := rd(tc.path, tc.ids); got != tc.want {
				t.Errorf("%s(%q, %v) = %v, want %v", name, tc.path, tc.ids, got, tc.want)
			}
		}
	}
	if _, code := tr.Exists("/a\x00", nil); code != zkproto.ErrBadArguments {
		t.Errorf("Exists with NUL = %v", code)
	}
	if _, _, code := tr.GetData("/a\x00", nil); code != zkproto.ErrNoNode {
		t.Errorf("GetData with NUL = %v", code)
	}
}

func TestGetACLMasksDigests(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	readOnlyAlice := []zkproto.ACL{{Perms: zkproto.PermRead, ID: alice}, {Perms: zkproto.PermAll, ID: bob},
		{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "ip", ID: "10.0.0.0/8"}}}
	h.must(txn.Entry{Session: sess, Op: createACL("/n", readOnlyAlice)})

	got, st, code := h.tree.GetACL("/n", []zkproto.Id{bob})
	if code != zkproto.OK || !slices.Equal(got, readOnlyAlice) || st != stat(t, h.tree, "/n") {
		t.Fatalf("admin's GetACL = %v %v", got, code)
	}
	got, _, code = h.tree.GetACL("/n", []zkproto.Id{alice})
	masked := []zkproto.ACL{{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: "alice:x"}},
		{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "digest", ID: "bob:x"}}, readOnlyAlice[2]}
	if code != zkproto.OK || !slices.Equal(got, masked) {
		t.Fatalf("reader's GetACL = %v, want %v", got, masked)
	}
	got[0].Perms = 0 // a copy: the tree's list is unchanged
	if again, _, _ := h.tree.GetACL("/n", []zkproto.Id{bob}); again[0].Perms != zkproto.PermRead {
		t.Fatalf("GetACL returned the tree's own list")
	}
	if _, _, code := h.tree.GetACL("/n", nil); code != zkproto.ErrNoAuth {
		t.Fatalf("stranger's GetACL = %v", code)
	}
	if _, _, code := h.tree.GetACL("/none", nil); code != zkproto.ErrNoNode {
		t.Fatalf("GetACL of a missing node = %v", code)
	}
	for in, want := range map[string]string{"a:b": "a:x", "noColon": "noColon", "a:b:c": "a:x", ":": ":x", "a:b\nc:d": "a:x\nc:x"} {
		if got := maskDigest(in); got != want {
			t.Errorf("maskDigest(%q) = %q, want %q", in, got, want)
		}
	}
}
