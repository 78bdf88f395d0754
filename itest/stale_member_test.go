package itest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// G is a group the leader is not in (it stays up while G changes);
	// the coordinator of G leaves last, so that G keeps its coordinator
	// while N joins, and S and the first to leave are its other members.
	g, x, coord, others := groupApart(t, c, groupsOf(t, c), leader)
	first, stale := others[0], others[1]
	var h []members.ID
	for _, grp := range groupsOf(t, c) {
		if !slices.Contains(grp, leader) && !slices.Contains(grp, g[0]) {
			h = grp
		}
	}
	t.Logf("leader %d, groups %v; group %d's coordinator is %d", leader, groupsOf(t, c), x, coord)

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
		t.Fatalf("the next join goes to group %d, not %d, which %d left (groups %v)", j, x, first, groupsOf(t, c))
	}
	joined, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := joined.ID // joined points into c.Servers, which the leaves change
	if err := c.Leave(coord, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(slices.Values(groupsOf(t, c)[x])), slices.Sorted(slices.Values([]members.ID{stale, n})); !slices.Equal(got, want) {
		t.Fatalf("group %d is %v after the changes, want %v (groups %v)", x, got, want, groupsOf(t, c))
	}
	cl2 := zkConnect(t, []string{serverAddr(t, c, leader)})
	if _, err := cl2.Create("/during", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	acked = append(acked, "/during")
	t.Logf("groups %v; %d is stale; killing leader %d, wiping %d and %d", groupsOf(t, c), stale, leader, h[0], h[1])

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

// groupsOf returns the groups of c's committed configuration.
func groupsOf(t *testing.T, c *launcher.Cluster) [][]members.ID {
	t.Helper()
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	return m.Groups
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

// TestStaleMembersFollowANewerConfigsCoordinator is the simulator's forest
// 9-3-3 seeds 911425 and 911111 on real processes. Group G's members end
// up under three configurations: P is cut off first and knows only the
// initial one; Q joins G, takes the configuration that adds it and is cut
// off in turn; then R joins G and G's coordinator leaves: G is P, Q and
// R. P's configuration puts neither Q nor R in G, Q's leaves R out, and
// the writes meanwhile make every server compact past P's and Q's logs.
// P comes back first, reaching only G, and R wins G with its promise;
// then Q, also reaching only G. R's snapshots are all that can catch
// them up, and they hold them for 5 and 3 s (slowsnap), as a large
// tree's take to arrive. R must count as heard by members whose
// configuration is older than its own: otherwise Q, then R, then Q take
// the role from each other at every election timeout, each new group
// epoch makes the members refuse the snapshot sent under the one before,
// and P and Q never catch up. Both
// must install their snapshots within 30 s with R's the only election,
// and serve a write made once healed.
func TestStaleMembersFollowANewerConfigsCoordinator(t *testing.T) {
	c := StartEnsemble(t, Forest9x33, "snapCount=100")
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	g, x, coord, others := groupApart(t, c, groupsOf(t, c), leader)
	p, first := others[0], others[1]
	t.Logf("leader %d, groups %v; group %d's coordinator is %d", leader, groupsOf(t, c), x, coord)
	// join adds a server to G, first adding servers to the other groups
	// until the forest puts the next one in G.
	join := func() members.ID {
		t.Helper()
		for {
			j := joinGroup(t, c)
			s, err := c.Join(60 * time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if j == x {
				return s.ID
			}
			t.Logf("%d joined group %d", s.ID, j)
		}
	}

	if _, err := c.Fault(p, "isolate"); err != nil {
		t.Fatal(err)
	}
	if err := c.Leave(first, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	q := join()
	if err := waitZxid(c, q, zxidOf(t, c, leader), 20*time.Second); err != nil {
		t.Fatalf("%d, joined, never caught up: %v", q, err)
	}
	if _, err := c.Fault(q, "isolate"); err != nil {
		t.Fatal(err)
	}
	r := join() // G's coordinator, still in place, brings it along
	if err := c.Leave(coord, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(slices.Values(groupsOf(t, c)[x])), slices.Sorted(slices.Values([]members.ID{p, q, r})); !slices.Equal(got, want) {
		t.Fatalf("group %d is %v after the changes, want %v (groups %v; the first was %v)", x, got, want, groupsOf(t, c), g)
	}

	cl := zkConnect(t, []string{serverAddr(t, c, leader)})
	if _, err := cl.Create("/w", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, err := cl.Set("/w", []byte(strconv.Itoa(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	logFrom := map[members.ID]int64{}
	for _, id := range []members.ID{p, q, r} {
		if fi, err := os.Stat(byID(t, c, id).LogFile); err == nil {
			logFrom[id] = fi.Size()
		}
	}
	// P first: R wins G with P's promise (P cannot win under its
	// configuration, in which G's other members left), then Q, while P
	// still waits for its snapshot. Both reach only G: R, whose log
	// starts after their last entries, is the one to catch them up.
	reachOnlyG := func(id members.ID, hold time.Duration) {
		t.Helper()
		spec := fmt.Sprintf("heal; slowsnap * %v", hold)
		for _, s := range c.Servers {
			if s.ID != p && s.ID != q && s.ID != r {
				spec += fmt.Sprintf("; block %d both", s.ID)
			}
		}
		if _, err := c.Fault(id, spec); err != nil {
			t.Fatal(err)
		}
	}
	reachOnlyG(p, 5*time.Second)
	healed := time.Now()
	waitRoleIn(t, c, []members.ID{r}, "coordinator")
	reachOnlyG(q, 3*time.Second)
	// Each installs the snapshot R sends it (under the old rule, the
	// snapshot sent under one group epoch arrived under the next and
	// was refused, again and again).
	for _, id := range []members.ID{p, q} {
		if err := waitLogged(byID(t, c, id).LogFile, logFrom[id], "installed snapshot", 30*time.Second-time.Since(healed)); err != nil {
			dumpFrom(t, c, logFrom, p, q, r)
			t.Fatalf("%d: %v (groups %v: P %d, Q %d, R %d)", id, err, groupsOf(t, c), p, q, r)
		}
	}
	t.Logf("P %d and Q %d installed their snapshots %v after the heal", p, q, time.Since(healed).Round(time.Millisecond))
	// R's was the only election in G meanwhile.
	var wins []string
	for _, id := range []members.ID{p, q, r} {
		for _, l := range logSince(byID(t, c, id).LogFile, logFrom[id]) {
			if strings.Contains(l, "role=coordinator") && strings.Contains(l, fmt.Sprintf(" group=%d ", x)) {
				wins = append(wins, l)
			}
		}
	}
	if len(wins) != 1 {
		t.Fatalf("G's coordinator changed %d times after the heal, want once (R %d):\n%s", len(wins), r, strings.Join(wins, "\n"))
	}
	for _, id := range []members.ID{p, q} {
		if _, err := c.Fault(id, "heal"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	want := zxidOf(t, c, leader)
	for _, id := range []members.ID{p, q} {
		if err := waitZxid(c, id, want, 10*time.Second); err != nil {
			t.Fatalf("%d: %v", id, err)
		}
	}
}

// logSince returns the lines of a server's log file from byte from on
// (none when it cannot be read).
func logSince(file string, from int64) []string {
	b, err := os.ReadFile(file)
	if err != nil || int64(len(b)) < from {
		return nil
	}
	return strings.Split(string(b[from:]), "\n")
}

// waitLogged waits until the log file, from byte from on, holds a line
// with msg.
func waitLogged(file string, from int64, msg string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if slices.ContainsFunc(logSince(file, from), func(l string) bool { return strings.Contains(l, msg) }) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %q in its log after %v", msg, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dumpFrom logs the protocol role changes and snapshots of ids since
// logFrom.
func dumpFrom(t *testing.T, c *launcher.Cluster, logFrom map[members.ID]int64, ids ...members.ID) {
	t.Helper()
	for _, id := range ids {
		for _, l := range logSince(byID(t, c, id).LogFile, logFrom[id]) {
			if strings.Contains(l, "protocol role") || strings.Contains(l, "snapshot") {
				t.Logf("%d: %s", id, l)
			}
		}
	}
}

// reportedZxid returns the last zxid server id reports; false when it
// does not run.
func reportedZxid(c *launcher.Cluster, id members.ID) (int64, bool) {
	for _, st := range c.Status() {
		if st.ID == id && st.Alive {
			return st.Zxid, true
		}
	}
	return 0, false
}

// zxidOf returns the last zxid server id reports, failing t when it does
// not run.
func zxidOf(t *testing.T, c *launcher.Cluster, id members.ID) int64 {
	t.Helper()
	z, ok := reportedZxid(c, id)
	if !ok {
		t.Fatalf("server %d reports no status", id)
	}
	return z
}

// waitZxid waits until server id reports a last zxid of at least z.
func waitZxid(c *launcher.Cluster, id members.ID, z int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := int64(-1)
	for time.Now().Before(deadline) {
		if zx, ok := reportedZxid(c, id); ok {
			last = zx
		}
		if last >= z {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("at zxid %#x after %v, want %#x", last, timeout, z)
}
