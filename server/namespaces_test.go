package server_test

import (
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/server"
)

// paperNamespaces declares the paper's two namespaces: /1 strong, /2 weak.
func paperNamespaces(c *server.Config) {
	if err := c.DeclareNamespace("1", "strong"); err != nil {
		panic(err)
	}
	if err := c.DeclareNamespace("2", "weak"); err != nil {
		panic(err)
	}
}

// TestNamespaceRoots: the declared roots exist before the first client
// arrives, cannot be deleted (alone or in a multi) and hold ordinary
// children; /zookeeper/namespaces publishes the table, read-only.
func TestNamespaceRoots(t *testing.T) {
	s := startTarget(t, paperNamespaces)
	c, _ := connect(t, s.Addr().String())
	acl := zk.WorldACL(zk.PermAll)
	kids := must(children(c, "/"))
	if !slices.Equal(kids, []string{"1", "2", "zookeeper"}) {
		t.Fatalf("children of /: %v", kids)
	}
	st1 := must(exists(c, "/1"))
	st2 := must(exists(c, "/2"))
	if st1.Czxid != st2.Czxid || st1.EphemeralOwner != 0 || st2.NumChildren != 0 {
		t.Fatalf("roots: %+v %+v", st1, st2)
	}
	data, _ := must2(c.Get("/zookeeper/namespaces"))
	if string(data) != `{"1":"strong","2":"weak"}` {
		t.Fatalf("/zookeeper/namespaces: %s", data)
	}
	if kids := must(children(c, "/zookeeper")); !slices.Contains(kids, "namespaces") {
		t.Fatalf("children of /zookeeper: %v", kids)
	}

	must(c.Create("/2/a", []byte("x"), 0, acl))
	must(c.Create("/2/a/b", nil, zk.FlagEphemeral, acl))
	if d, _ := must2(c.Get("/2/a")); string(d) != "x" {
		t.Fatalf("child data %q", d)
	}
	must(c.Set("/2", []byte("root data"), -1))

	wantErr(t, c.Delete("/2", -1), zk.ErrBadArguments)
	wantErr(t, c.Delete("/1", -1), zk.ErrBadArguments)
	wantErr(t, c.Delete("/zookeeper/namespaces", -1), zk.ErrBadArguments)
	_, err := c.Set("/zookeeper/namespaces", []byte("{}"), -1)
	wantErr(t, err, zk.ErrNoAuth)
	_, err = c.Create("/zookeeper/namespaces/x", nil, 0, acl)
	wantErr(t, err, zk.ErrNoAuth)

	// A multi with a root's delete fails whole, before it is ordered.
	_, err = c.Multi(&zk.CreateRequest{Path: "/1/m", Data: nil, Acl: acl}, &zk.DeleteRequest{Path: "/1", Version: -1})
	if !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("multi deleting a root: %v", err)
	}
	if ok, _, _ := c.Exists("/1/m"); ok {
		t.Fatal("the refused multi created /1/m")
	}
	if must(exists(c, "/1")).Mzxid != st1.Mzxid {
		t.Fatal("a refused delete changed the root")
	}

	must0(t, c.Delete("/2/a/b", -1))
	must0(t, c.Delete("/2/a", -1))
	// Undeclared top-level names stay ordinary znodes.
	must(c.Create("/3", nil, 0, acl))
	must0(t, c.Delete("/3", -1))
}

// TestSuperUserCannotChangeTheTable: a super user, whom no ACL stops, may
// overwrite /zookeeper/namespaces; the server that decides for the
// ensemble declares the table again, and no client loses its connection.
func TestSuperUserCannotChangeTheTable(t *testing.T) {
	s := startTarget(t, paperNamespaces, func(c *server.Config) { c.SuperDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" })
	var drops atomic.Int32
	countDrops := zk.WithEventCallback(func(e zk.Event) {
		if e.State == zk.StateDisconnected {
			drops.Add(1)
		}
	})
	su, _ := connect(t, s.Addr().String(), countDrops)
	if err := su.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	other, _ := connect(t, s.Addr().String(), countDrops)
	must(su.Set("/zookeeper/namespaces", []byte(`{"2":"strong"}`), -1))
	deadline := time.Now().Add(10 * time.Second)
	for {
		must(other.Sync("/zookeeper/namespaces"))
		data, _ := must2(other.Get("/zookeeper/namespaces"))
		if string(data) == `{"1":"strong","2":"weak"}` {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/zookeeper/namespaces still %s", data)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if n := drops.Load(); n != 0 {
		t.Fatalf("clients lost their connection %d times", n)
	}
}

// TestNoNamespacesWritesNothing: with nothing declared the server orders
// no entry at start and /zookeeper holds what ZooKeeper's does.
func TestNoNamespacesWritesNothing(t *testing.T) {
	s := startServer(t)
	c, _ := connect(t, s.Addr().String())
	if kids := must(children(c, "/zookeeper")); !slices.Equal(kids, []string{"config", "quota"}) {
		t.Fatalf("children of /zookeeper: %v", kids)
	}
	st := must(exists(c, "/"))
	if st.Pzxid != 0 || st.NumChildren != 1 {
		t.Fatalf("/ changed at start: %+v", st)
	}
	wantErr(t, c.Delete("/zookeeper/namespaces", -1), zk.ErrNoNode)
}

// TestNamespacesAcrossRestarts: a restart with the same table changes
// nothing; a namespace declared later gets its root at the next start; a
// table emptied leaves the roots as ordinary znodes and publishes {}.
func TestNamespacesAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, func(c *server.Config) { c.DataDir = dir; paperNamespaces(c) })
	c, _ := connect(t, s.Addr().String())
	must(c.Create("/2/kept", []byte("v"), 0, zk.WorldACL(zk.PermAll)))
	root := must(exists(c, "/2"))
	table := must(exists(c, "/zookeeper/namespaces"))
	c.Close()
	s.Close()

	s = startServer(t, func(c *server.Config) { c.DataDir = dir; paperNamespaces(c) })
	c, _ = connect(t, s.Addr().String())
	if st := must(exists(c, "/2")); *st != *root {
		t.Fatalf("root after restart: %+v, was %+v", st, root)
	}
	if st := must(exists(c, "/zookeeper/namespaces")); *st != *table {
		t.Fatalf("table after restart: %+v, was %+v", st, table)
	}
	c.Close()
	s.Close()

	s = startServer(t, func(c *server.Config) {
		c.DataDir = dir
		paperNamespaces(c)
		c.DeclareNamespace("3", "weak")
	})
	c, _ = connect(t, s.Addr().String())
	must(exists(c, "/3"))
	wantErr(t, c.Delete("/3", -1), zk.ErrBadArguments)
	if data, st := must2(c.Get("/zookeeper/namespaces")); string(data) != `{"1":"strong","2":"weak","3":"weak"}` || st.Version != 1 {
		t.Fatalf("table after adding /3: %s %+v", data, st)
	}
	if d, _ := must2(c.Get("/2/kept")); string(d) != "v" {
		t.Fatalf("/2/kept: %q", d)
	}
	c.Close()
	s.Close()

	s = startServer(t, func(c *server.Config) { c.DataDir = dir })
	c, _ = connect(t, s.Addr().String())
	if data, _ := must2(c.Get("/zookeeper/namespaces")); string(data) != "{}" {
		t.Fatalf("table after undeclaring: %s", data)
	}
	must0(t, c.Delete("/3", -1))
}

func children(c *zk.Conn, path string) ([]string, error) {
	kids, _, err := c.Children(path)
	slices.Sort(kids)
	return kids, err
}

func exists(c *zk.Conn, path string) (*zk.Stat, error) {
	ok, st, err := c.Exists(path)
	if err == nil && !ok {
		err = zk.ErrNoNode
	}
	return st, err
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		panic(err)
	}
	return a, b
}

func must0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
