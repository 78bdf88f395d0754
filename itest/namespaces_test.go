package itest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// paperNamespaces are the zoo.cfg lines of the paper's two namespaces.
var paperNamespaces = []string{"giraffe.namespace.1=strong", "giraffe.namespace.2=weak"}

// statOnEvery returns path's Stat as every server's session sees it,
// failing the test unless all agree.
func statOnEvery(t *testing.T, conns []*zk.Conn, path string) zk.Stat {
	t.Helper()
	var first zk.Stat
	for i, cl := range conns {
		ok, st, err := cl.Exists(path)
		if err != nil || !ok {
			t.Fatalf("server %d: %s: exists %v, %v", i+1, path, ok, err)
		}
		if i == 0 {
			first = *st
		} else if *st != first {
			t.Fatalf("%s: server %d has stat %+v, server 1 %+v", path, i+1, *st, first)
		}
	}
	return first
}

// connectEach opens one session on every server of c.
func connectEach(t *testing.T, c *launcher.Cluster) []*zk.Conn {
	t.Helper()
	var out []*zk.Conn
	for _, s := range c.Servers {
		out = append(out, zkConnect(t, []string{s.ClientAddr}))
	}
	return out
}

// appendConfig adds a line to every server's zoo.cfg (read at its next
// start).
func appendConfig(t *testing.T, s launcher.Server, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(s.Dir, "zoo.cfg"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, line); err != nil {
		t.Fatal(err)
	}
}

// TestNamespacesOnEveryReplica starts a classic-3 ensemble with the
// paper's namespaces: the roots and /zookeeper/namespaces are there on
// every server, with one Stat, before any client; deleting a root is
// refused everywhere; after writes through every server the replicas'
// digests are equal at equal zxids. A restarted member keeps the roots as
// they were; a namespace declared on every member across a restart of the
// whole ensemble gets its root through the log, again equal everywhere.
func TestNamespacesOnEveryReplica(t *testing.T) {
	c := StartEnsemble(t, Classic3, paperNamespaces...)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	conns := connectEach(t, c)
	root1 := statOnEvery(t, conns, "/1")
	root2 := statOnEvery(t, conns, "/2")
	statOnEvery(t, conns, "/zookeeper/namespaces")
	if root1.Czxid != root2.Czxid || root2.EphemeralOwner != 0 {
		t.Fatalf("roots: %+v %+v", root1, root2)
	}
	for i, cl := range conns {
		data, _, err := cl.Get("/zookeeper/namespaces")
		if err != nil || string(data) != `{"1":"strong","2":"weak"}` {
			t.Fatalf("server %d: /zookeeper/namespaces %q, %v", i+1, data, err)
		}
		if err := cl.Delete("/2", -1); !errors.Is(err, zk.ErrBadArguments) {
			t.Fatalf("server %d: delete /2: %v", i+1, err)
		}
		_, err = cl.Multi(&zk.CreateRequest{Path: "/1/m", Acl: zk.WorldACL(zk.PermAll)}, &zk.DeleteRequest{Path: "/1", Version: -1})
		if !errors.Is(err, zk.ErrBadArguments) {
			t.Fatalf("server %d: multi deleting /1: %v", i+1, err)
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	for i, cl := range conns {
		for _, ns := range []string{"/1", "/2"} {
			p := fmt.Sprintf("%s/s%d", ns, i+1)
			if _, err := cl.Create(p, []byte("a"), 0, acl); err != nil {
				t.Fatal(err)
			}
			for j := 0; j < 5; j++ {
				if _, err := cl.Set(p, []byte(fmt.Sprint(j)), -1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if _, err := conns[0].Sync("/2"); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := conns[0].Exists("/1/m"); ok {
		t.Fatal("a refused multi created /1/m")
	}
	t.Logf("after writes: %s", waitEqualDigests(t, c, 20*time.Second))

	// A member restarted from its data directory finds the roots as
	// they were.
	if err := c.Restart(c.Servers[2].ID); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	restarted := zkConnect(t, []string{c.Servers[2].ClientAddr})
	if _, err := restarted.Sync("/2"); err != nil {
		t.Fatal(err)
	}
	if ok, st, err := restarted.Exists("/2"); err != nil || !ok || st.Czxid != root2.Czxid || st.Ctime != root2.Ctime {
		t.Fatalf("/2 after a restart: %v %+v %v, was %+v", ok, st, err, root2)
	}
	t.Logf("after a restart: %s", waitEqualDigests(t, c, 20*time.Second))

	// Declared later: the whole ensemble restarts with a third namespace.
	c.Stop(5 * time.Second)
	for _, s := range c.Servers {
		appendConfig(t, s, "giraffe.namespace.3=weak")
	}
	for _, s := range c.Servers {
		if err := c.Restart(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitLeader(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	conns = connectEach(t, c)
	root3 := statOnEvery(t, conns, "/3")
	if root3.Czxid <= root2.Czxid {
		t.Fatalf("/3 created at %#x, before /2 (%#x)", root3.Czxid, root2.Czxid)
	}
	if st := statOnEvery(t, conns, "/2"); st.Czxid != root2.Czxid {
		t.Fatalf("/2 recreated: %+v", st)
	}
	for i, cl := range conns {
		data, _, err := cl.Get("/zookeeper/namespaces")
		if err != nil || string(data) != `{"1":"strong","2":"weak","3":"weak"}` {
			t.Fatalf("server %d: /zookeeper/namespaces %q, %v", i+1, data, err)
		}
		if err := cl.Delete("/3", -1); !errors.Is(err, zk.ErrBadArguments) {
			t.Fatalf("server %d: delete /3: %v", i+1, err)
		}
	}
	t.Logf("after declaring /3: %s", waitEqualDigests(t, c, 20*time.Second))
}

// TestMemberWithOtherNamespaceTable restarts one member of a classic-3
// ensemble with another namespace table: its peers refuse it, both sides
// log why with both tables named, it serves no client, and the other two
// keep serving writes.
func TestMemberWithOtherNamespaceTable(t *testing.T) {
	c := StartEnsemble(t, Classic3, paperNamespaces...)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var odd launcher.Server
	var others []launcher.Server
	for _, s := range c.Servers {
		if s.ID != leader && odd.ID == members.None {
			odd = s
		} else {
			others = append(others, s)
		}
	}
	if err := c.Kill(odd.ID); err != nil {
		t.Fatal(err)
	}
	appendConfig(t, odd, "giraffe.namespace.2=strong") // the later line wins
	if err := c.Restart(odd.ID); err != nil {
		t.Fatal(err)
	}

	cl := zkConnect(t, []string{others[0].ClientAddr, others[1].ClientAddr})
	const reason = "namespace tables differ"
	deadline := time.Now().Add(20 * time.Second)
	writes := 0
	for {
		if _, err := cl.Create(fmt.Sprintf("/1/w%04d", writes), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("write %d while a member is refused: %v", writes, err)
		}
		writes++
		for _, st := range c.Status() {
			if st.ID == odd.ID && st.Serving {
				t.Fatalf("server %d with another namespace table serves: %+v", odd.ID, st)
			}
		}
		refusedBy := 0
		for _, s := range others {
			if strings.Contains(serverLog(t, s), reason) {
				refusedBy++
			}
		}
		if refusedBy == len(others) && strings.Contains(serverLog(t, odd), reason) && writes >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %d writes, no refusal logged on both sides", writes)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, s := range append([]launcher.Server{odd}, others...) {
		log := serverLog(t, s)
		for _, tab := range []string{"declares 1=strong,2=strong", "declares 1=strong,2=weak"} {
			if !strings.Contains(log, tab) {
				t.Errorf("server %d's log does not name table %q", s.ID, tab)
			}
		}
	}
	refusesClients(t, odd.ClientAddr)
	for _, st := range c.Status() {
		if st.ID != odd.ID && !st.Serving {
			t.Fatalf("server %d stopped serving: %+v", st.ID, st)
		}
	}
}

// TestJoinWithOtherNamespaceTable: a server whose zoo.cfg declares another
// namespace table cannot join a running ensemble (it learns the
// ensemble's table before asking for the change, and stops saying why);
// one with the same table joins and holds the same tree.
func TestJoinWithOtherNamespaceTable(t *testing.T) {
	c := StartEnsemble(t, Classic3, paperNamespaces...)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	withTable := c.Spec.Extra
	c.Spec.Extra = slices.DeleteFunc(slices.Clone(withTable), func(l string) bool {
		return strings.HasPrefix(l, "giraffe.namespace.")
	})
	bad, err := c.Join(30 * time.Second)
	if err == nil {
		t.Fatalf("server %d without the namespaces joined", bad.ID)
	}
	refused := c.Servers[len(c.Servers)-1]
	const why = "this server declares namespaces none, the ensemble 1=strong,2=weak"
	if log := serverLog(t, refused); !strings.Contains(log, why) {
		t.Fatalf("the refused server's log does not say %q:\n%s", why, log)
	}
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != 3 {
		t.Fatalf("members after a refused join: %+v", m.Members)
	}

	c.Spec.Extra = withTable
	joined, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cl := zkConnect(t, []string{joined.ClientAddr})
	if _, err := cl.Sync("/2"); err != nil {
		t.Fatal(err)
	}
	if ok, _, err := cl.Exists("/2"); err != nil || !ok {
		t.Fatalf("/2 on the joined server: %v %v", ok, err)
	}
	t.Logf("with the joined server: %s", waitEqualDigests(t, c, 20*time.Second, refused.ID))
}
