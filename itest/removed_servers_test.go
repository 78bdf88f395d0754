package itest

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestRemovedServersDoNotFenceTheLeader is the simulator's forest 9-3-3
// seed 907055 on real processes. Two members A and B of a group G are cut
// off while the ensemble removes them and G's coordinator, and a newcomer
// (and a server the forest moves) take their places; A and B then run
// again from their disks, as a supervisor restarts a server whose removal
// it never heard of. Under the configuration they know, A and B are a
// majority of G: one coordinates the other and, hearing no leader, runs
// for leader again and again. What must hold: the leader keeps its epoch
// while they run (the coordinators of the configuration in force refuse a
// candidate it leaves out, whose history is older than theirs), and
// writes go on. The protocol before failed it 3 times in 3 (the leader's
// epoch rose at their campaigns).
func TestRemovedServersDoNotFenceTheLeader(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	g, x, coord, others := groupApart(t, c, m.Groups, leader)
	a, b := others[0], others[1]
	removed := []launcher.Server{byID(t, c, a), byID(t, c, b)}
	t.Logf("leader %d, groups %v; group %d: coordinator %d, cut off %d and %d", leader, m.Groups, x, coord, a, b)

	for _, id := range []members.ID{a, b} {
		if _, err := c.Fault(id, "isolate"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Leave(a, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if j := joinGroup(t, c); j != x {
		t.Fatalf("the next join goes to group %d, not %d, which %d left", j, x, a)
	}
	joined, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := joined.ID
	for _, id := range []members.ID{b, coord} {
		if err := c.Leave(id, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	m, err = c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	// The forest may move a server of another group into G as well; none
	// of G's servers before is left in it.
	if !slices.Contains(m.Groups[x], n) || slices.ContainsFunc(m.Groups[x], func(id members.ID) bool { return slices.Contains(g, id) }) {
		t.Fatalf("group %d is %v after the changes, want %d and none of %v (groups %v)", x, m.Groups[x], n, g, m.Groups)
	}
	t.Logf("groups %v", m.Groups)

	// G's coordinator restarts and takes its role back under a group
	// epoch above any A and B can reach from theirs, so that the leader
	// does not take their coordinator's hello for G's and synchronize it.
	gc := groupCoordinator(t, c, m.Groups[x])
	if err := c.Restart(gc); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStarted(gc, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	l, cl := leaderWithAWrite(t, c)
	t.Logf("restarted %d, group %d's coordinator; now %d; leader %d", gc, x, groupCoordinator(t, c, m.Groups[x]), l)

	// A and B run again, their logs ending before their removal.
	logFrom := map[members.ID]int64{}
	for _, s := range removed {
		if fi, err := os.Stat(s.LogFile); err == nil {
			logFrom[s.ID] = fi.Size()
		}
		restartRemoved(t, c, s)
	}
	// The removed pair elects a coordinator within an election timeout or
	// two and then campaigns every two: 5 s covers dozens of campaigns.
	keepsEpochWhileWriting(t, c, cl, l, 5*time.Second)
	// And they did run for leader: the test tried what it says.
	ran := false
	for _, s := range removed {
		b, err := os.ReadFile(s.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		ran = ran || strings.Contains(string(b[logFrom[s.ID]:]), fmt.Sprintf("role=coordinator leader=%d ", s.ID))
	}
	if !ran {
		t.Fatalf("neither %d nor %d ran for leader after their restart", a, b)
	}
	if _, err := cl.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}

// leaderWithAWrite waits for a leader, connects to it and creates /before
// through it.
func leaderWithAWrite(t *testing.T, c *launcher.Cluster) (members.ID, *zk.Conn) {
	t.Helper()
	l, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cl := zkConnect(t, []string{serverAddr(t, c, l)})
	if _, err := cl.Create("/before", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	return l, cl
}

// keepsEpochWhileWriting writes through cl to leader l for d and checks
// that l leads under one epoch all along.
func keepsEpochWhileWriting(t *testing.T, c *launcher.Cluster, cl *zk.Conn, l members.ID, d time.Duration) {
	t.Helper()
	first, ok := leaderEpoch(c, l)
	if !ok {
		t.Fatalf("leader %d does not answer srvr", l)
	}
	var epochs []int64
	for end := time.Now().Add(d); time.Now().Before(end); {
		if _, err := cl.Set("/", []byte("x"), -1); err != nil {
			t.Fatalf("write on leader %d: %v", l, err)
		}
		if e, ok := leaderEpoch(c, l); ok && !slices.Contains(epochs, e) {
			epochs = append(epochs, e)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(epochs) != 1 || epochs[0] != first {
		t.Errorf("leader %d's epoch went through %v while the removed servers ran, want %d only", l, epochs, first)
	}
}

// leaderEpoch returns the epoch of server l's zxid while it leads, and -1
// while it does not; ok is false when l did not answer srvr, which on a
// busy machine says nothing of its role.
func leaderEpoch(c *launcher.Cluster, l members.ID) (epoch int64, ok bool) {
	for _, st := range c.Status() {
		if st.ID != l {
			continue
		}
		switch {
		case st.Role == "unreachable":
			return 0, false
		case st.Alive && st.Role == "leader":
			return st.Zxid >> 32, true
		}
	}
	return -1, true
}

// restartRemoved starts the process of server s, which the ensemble
// removed and the launcher forgot, again from its data directory; it is
// killed when the test ends.
func restartRemoved(t *testing.T, c *launcher.Cluster, s launcher.Server) {
	t.Helper()
	p, err := c.Spawn(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
}

// groupCoordinator returns the coordinator of the group of ids, waiting
// for one: the server of ids that coordinates, or leads (the leader
// coordinates its own group).
func groupCoordinator(t *testing.T, c *launcher.Cluster, ids []members.ID) members.ID {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, st := range c.Status() {
			if st.Alive && (st.Role == "coordinator" || st.Role == "leader") && slices.Contains(ids, st.ID) {
				return st.ID
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("none of %v coordinates within 20s", ids)
	return members.None
}

// TestRemovedPairDoesNotTakeItsOldGroupBack is the simulator's forest
// 9-3-3 seed 925583 on real processes. Two members A and B of a group G
// are cut off while the ensemble removes them and newcomers take their
// places; G's coordinator C stays. A and B then run again from their
// disks, heard by the others but answered by none, so that they learn
// nothing of their removal. Under the configuration they know, G is A, B and C, of which
// they are a majority: one of them wins G under a group epoch above C's
// and sends C its group appends. What must hold: C keeps coordinating G
// (a member does not follow a new group epoch of a server its
// configuration leaves out, whose configuration is older and history no
// newer than its own), no server of G in force follows A or B, the
// leader keeps its epoch and writes go on. Followed, the pair's group
// epoch fences C, which wins G back above it, and the role changes hands
// for as long as they run.
func TestRemovedPairDoesNotTakeItsOldGroupBack(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_, x, coord, others := groupApart(t, c, groupsOf(t, c), leader)
	a, b := others[0], others[1]
	removed := []launcher.Server{byID(t, c, a), byID(t, c, b)}
	t.Logf("leader %d, groups %v; group %d: coordinator %d stays, %d and %d are cut off", leader, groupsOf(t, c), x, coord, a, b)
	for _, id := range []members.ID{a, b} {
		if _, err := c.Fault(id, "isolate"); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []members.ID{a, b} {
		if err := c.Leave(id, 30*time.Second); err != nil {
			t.Fatal(err)
		}
		if j := joinGroup(t, c); j != x {
			t.Fatalf("the next join goes to group %d, not %d, which %d left", j, x, id)
		}
		if _, err := c.Join(60 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	g := m.Groups[x]
	if !slices.Contains(g, coord) || slices.Contains(g, a) || slices.Contains(g, b) {
		t.Fatalf("group %d is %v after the changes, want %d in it and neither %d nor %d (groups %v)", x, g, coord, a, b, m.Groups)
	}
	if k := groupCoordinator(t, c, g); k != coord {
		t.Fatalf("group %d's coordinator is %d after the changes, want %d", x, k, coord)
	}
	l, cl := leaderWithAWrite(t, c)
	t.Logf("groups %v; leader %d", m.Groups, l)

	// Where each log stands before A and B run again.
	logFrom := map[members.ID]int64{}
	var watched []launcher.Server
	for _, id := range g {
		watched = append(watched, byID(t, c, id))
	}
	watched = append(watched, removed...)
	for _, s := range watched {
		if fi, err := os.Stat(s.LogFile); err == nil {
			logFrom[s.ID] = fi.Size()
		}
	}
	// Nothing reaches A and B but each other: a coordinator or leader
	// that answered them would bring them their removal, as the
	// snapshot that seed needed never arrived in time; C still hears
	// them.
	for _, st := range c.Status() {
		if st.Alive {
			if _, err := c.Fault(st.ID, fmt.Sprintf("block %d; block %d", a, b)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, s := range removed {
		restartRemoved(t, c, s)
	}
	keepsEpochWhileWriting(t, c, cl, l, 5*time.Second)
	since := func(s launcher.Server) string {
		t.Helper()
		b, err := os.ReadFile(s.LogFile)
		if err != nil {
			t.Fatal(err)
		}
		return string(b[min(logFrom[s.ID], int64(len(b))):])
	}
	for _, s := range watched[:len(g)] {
		text := since(s)
		for _, r := range []members.ID{a, b} {
			if strings.Contains(text, fmt.Sprintf(" coordinator=%d ", r)) {
				t.Errorf("server %d of group %d followed the removed server %d as its coordinator", s.ID, x, r)
			}
		}
	}
	// And the pair did win its old group: the test tried what it says.
	won := false
	for _, s := range removed {
		won = won || strings.Contains(since(s), "role=coordinator ")
	}
	if !won {
		for _, s := range removed {
			t.Logf("server %d's log since its restart:\n%s", s.ID, since(s))
		}
		t.Fatalf("neither %d nor %d coordinated after their restart", a, b)
	}
	if _, err := cl.Create("/after", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
