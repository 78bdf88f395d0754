package server_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/server"
)

// namespacesOf reads s's /namespaces, keyed by root.
func namespacesOf(t *testing.T, s *server.Server) (adminapi.NamespacesStatus, map[string]adminapi.NamespaceStatus) {
	t.Helper()
	st, err := adminapi.Client{}.Namespaces(context.Background(), s.MetricsAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	byRoot := map[string]adminapi.NamespaceStatus{}
	for _, ns := range st.Namespaces {
		byRoot[ns.Root] = ns
	}
	return st, byRoot
}

// TestNamespacesStatusStandalone checks /namespaces on a standalone
// server: the declared namespaces and the default one with their levels,
// counts and last zxids; a write moves only its namespace's digest and
// last zxid; and after a restart from the data directory the digests and
// counts are the same and the last zxids no earlier.
func TestNamespacesStatusStandalone(t *testing.T) {
	dir := t.TempDir()
	declare := func(c *server.Config) {
		c.DataDir = dir
		c.ClientPort = 0
		if err := c.DeclareNamespace("1", "strong"); err != nil {
			t.Fatal(err)
		}
		if err := c.DeclareNamespace("2", "weak"); err != nil {
			t.Fatal(err)
		}
	}
	s, _ := startLogged(t, declare)
	c, ev, err := zk.Connect([]string{s.Addr().String()}, 5*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-time.After(10 * time.Second):
			t.Fatal("no session")
		}
	}
	for i := 0; i < 5; i++ {
		for _, root := range []string{"/1", "/2"} {
			if _, err := c.Create(fmt.Sprintf("%s/n%d", root, i), []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.Sync("/2"); err != nil {
		t.Fatal(err)
	}
	st, before := namespacesOf(t, s)
	if len(st.Namespaces) != 3 || st.Namespaces[2].Root != "/" {
		t.Fatalf("namespaces %+v: want /1, /2, then the default one", st.Namespaces)
	}
	for root, level := range map[string]string{"/1": "strong", "/2": "weak", "/": "strong"} {
		ns := before[root]
		if ns.Level != level || ns.State != adminapi.StateHealthy || ns.LastZxid == 0 || ns.LastZxid > st.AppliedZxid {
			t.Fatalf("%s: %+v at applied zxid %#x", root, ns, st.AppliedZxid)
		}
	}
	if before["/1"].Nodes != 6 || before["/2"].Nodes != 6 {
		t.Fatalf("znodes: /1 %d, /2 %d; want 6 each", before["/1"].Nodes, before["/2"].Nodes)
	}

	if _, err := c.Set("/1/n0", []byte("y"), -1); err != nil {
		t.Fatal(err)
	}
	_, after := namespacesOf(t, s)
	if after["/1"].Digest == before["/1"].Digest || after["/1"].LastZxid <= before["/1"].LastZxid {
		t.Fatalf("a setData in /1 left it at %+v (was %+v)", after["/1"], before["/1"])
	}
	if after["/2"] != before["/2"] || after["/"] != before["/"] {
		t.Fatalf("a setData in /1 changed another namespace: /2 %+v, / %+v", after["/2"], after["/"])
	}

	c.Close()
	s.Close()
	s2, _ := startLogged(t, declare)
	_, back := namespacesOf(t, s2)
	for root, ns := range after {
		got := back[root]
		if got.Digest != ns.Digest || got.Nodes != ns.Nodes || got.LastZxid < ns.LastZxid {
			t.Fatalf("%s after a restart: %+v, before %+v", root, got, ns)
		}
	}
}
