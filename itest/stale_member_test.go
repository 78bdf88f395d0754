package itest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestStaleMemberLetsItsNewGroupElect is the simulator's forest 9-3-3
// seed 878891 on real processes. A member S of group G is cut off from
// every peer while one of G's other members leaves, a server N joins G
// and G's third member leaves (removed servers stop): G is now S and N, and S knows only
// the initial configuration, in which N is nobody. Then the leader is
// killed and two members of a third group lose their disks: that group
// counts as down until they are registered again, which needs a leader,
// so no leader can be elected without G's promise, which needs S's. Once
// S is reachable again the ensemble must elect a leader (S promises to N,
// whose configuration is newer than its own, and learns it from N as its
// coordinator), keep every acknowledged write and take new ones.
func TestStaleMemberLetsItsNewGroupElect(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	groups := func() [][]members.ID {
		t.Helper()
		m, err := c.Membership(members.None)
		if err != nil {
			t.Fatal(err)
		}
		return m.Groups
	}
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// G is a group the leader is not in (it stays up while G changes);
	// the coordinator of G leaves last, so that G keeps its coordinator
	// while N joins, and S and the first to leave are its other members.
	g, x, coord, others := groupApart(t, c, groups(), leader)
	first, stale := others[0], others[1]
	var h []members.ID
	for _, grp := range groups() {
		if !slices.Contains(grp, leader) && !slices.Contains(grp, g[0]) {
			h = grp
		}
	}
	t.Logf("leader %d, groups %v; group %d's coordinator is %d", leader, groups(), x, coord)

	cl := zkConnect(t, addrs(c))
	acked := []string{"/before"}
	if _, err := cl.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fault(stale, "isolate"); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(first, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if j := joinGroup(t, c); j != x {
		t.Fatalf("the next join goes to group %d, not %d, which %d left (groups %v)", j, x, first, groups())
	}
	joined, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := joined.ID // joined points into c.Servers, which the leaves change
	if err := c.Leave(coord, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(slices.Values(groups()[x])), slices.Sorted(slices.Values([]members.ID{stale, n})); !slices.Equal(got, want) {
		t.Fatalf("group %d is %v after the changes, want %v (groups %v)", x, got, want, groups())
	}
	cl2 := zkConnect(t, []string{serverAddr(t, c, leader)})
	if _, err := cl2.Create("/during", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	acked = append(acked, "/during")
	t.Logf("groups %v; %d is stale; killing leader %d, wiping %d and %d", groups(), stale, leader, h[0], h[1])

	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	for _, id := range h[:2] {
		s := byID(t, c, id)
		if err := c.Kill(id); err != nil {
			t.Fatal(err)
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, "data", "replica")); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Fault(stale, "heal"); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	if _, err := Leader(c, 30*time.Second); err != nil {
		t.Fatalf("no leader within 30s of healing the stale member: %v", err)
	}
	t.Logf("leader elected %v after the heal", time.Since(healed).Round(time.Millisecond))
	var live []string
	for _, s := range c.Servers {
		if s.ID != leader {
			live = append(live, s.ClientAddr)
		}
	}
	after := zkConnect(t, live)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := after.Create("/after", nil, 0, zk.WorldACL(zk.PermAll))
		if err == nil || err == zk.ErrNodeExists {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write taken within 30s of the election: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range append(acked, "/after") {
		for _, addr := range []string{serverAddr(t, c, stale), serverAddr(t, c, n)} {
			r := zkConnect(t, []string{addr})
			if _, err := r.Sync(p); err != nil {
				t.Fatalf("sync on %s: %v", addr, err)
			}
			if ok, _, err := r.Exists(p); err != nil || !ok {
				t.Fatalf("%s on %s: exists %v, %v", p, addr, ok, err)
			}
		}
	}
}

// joinGroup returns the group the forest gives the next server to join
// c, replaying its committed history of joins and departures.
func joinGroup(t *testing.T, c *launcher.Cluster) int {
	t.Helper()
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	next := forest.ServerID(0)
	for _, ch := range forestChanges(m) {
		next = max(next, ch.Server+1)
	}
	fr, err := forestOf(m, forest.Change{Op: forest.OpJoin, Server: next, Addr: strconv.Itoa(int(next))})
	if err != nil {
		t.Fatal(err)
	}
	col, ok := fr.Color(next)
	if !ok {
		t.Fatalf("the forest of %q gives server %d no group", m.Forest, next)
	}
	return int(col)
}

// groupApart returns a group of groups that leader is not in, its index,
// its coordinator (waiting for one) and its other members.
func groupApart(t *testing.T, c *launcher.Cluster, groups [][]members.ID, leader members.ID) (g []members.ID, x int, coord members.ID, others []members.ID) {
	t.Helper()
	for i, grp := range groups {
		if !slices.Contains(grp, leader) {
			g, x = grp, i
			break
		}
	}
	if g == nil {
		t.Fatalf("every group of %v holds leader %d", groups, leader)
	}
	coord = waitRoleIn(t, c, g, "coordinator")
	others = slices.DeleteFunc(slices.Clone(g), func(id members.ID) bool { return id == coord })
	return g, x, coord, others
}

// waitRoleIn returns the server of ids that has the role, waiting for one.
func waitRoleIn(t *testing.T, c *launcher.Cluster, ids []members.ID, role string) members.ID {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range c.Status() {
			if st.Alive && st.Role == role && slices.Contains(ids, st.ID) {
				return st.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("none of %v is %s within 20s", ids, role)
	return members.None
}
