package itest

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestJoinAndLeaveUnderLoad grows a running 9-3-3 ensemble by two servers
// and shrinks it by three (a joined acceptor, a coordinator and the
// leader) while writers keep writing: every acknowledged write survives,
// the joined servers serve the whole tree, and after every change the
// groups `cluster status` reports are the ones the forest algorithms give
// for the ensemble's history of joins and departures.
func TestJoinAndLeaveUnderLoad(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	setup := zkConnect(t, addrs(c))
	if _, err := setup.Create("/load", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[string]bool{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	all := addrs(c)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			order := append(append([]string{}, all[w%len(all):]...), all[:w%len(all)]...)
			cl, _, err := zk.Connect(order, 4*time.Second, zk.WithLogInfo(false))
			if err != nil {
				return
			}
			defer cl.Close()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := fmt.Sprintf("/load/w%d-%06d", w, i)
				if _, err := cl.Create(p, []byte("x"), 0, zk.WorldACL(zk.PermAll)); err == nil {
					mu.Lock()
					acked[p] = true
					mu.Unlock()
				} else if !errors.Is(err, zk.ErrNodeExists) {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(w)
	}
	pause := func() { time.Sleep(500 * time.Millisecond) }
	var joined []members.ID
	for i := 0; i < 2; i++ {
		pause()
		s, err := c.Join(60 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("server %d joined", s.ID)
		joined = append(joined, s.ID)
		checkForest(t, c)
	}
	leave := func(what string, id members.ID) {
		pause()
		t.Logf("server %d (%s) leaves", id, what)
		if err := c.Leave(id, 60*time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := Leader(c, 20*time.Second); err != nil {
			t.Fatalf("after server %d left: %v", id, err)
		}
		checkForest(t, c)
	}
	leave("joined acceptor", joined[0])
	leave("coordinator", waitRole(t, c, "coordinator"))
	leave("leader", waitRole(t, c, "leader"))
	pause()
	close(stop)
	wg.Wait()

	// Every acknowledged write is there, read through a server that
	// joined while they were being made (if one is left: the leader that
	// left may have been one of them).
	via := c.Servers[0].ID
	for _, sv := range c.Servers {
		if sv.Joined {
			via = sv.ID
		}
	}
	s, err := c.Membership(via)
	if err != nil || s.Leader == 0 {
		t.Fatalf("server %d: %+v %v", via, s, err)
	}
	check := zkConnect(t, []string{serverAddr(t, c, via)})
	if _, err := check.Sync("/load"); err != nil {
		t.Fatal(err)
	}
	kids, _, err := check.Children("/load")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, k := range kids {
		have["/load/"+k] = true
	}
	var lost []string
	for p := range acked {
		if !have[p] {
			lost = append(lost, p)
		}
	}
	sort.Strings(lost)
	t.Logf("%d acknowledged writes, %d nodes present on server %d", len(acked), len(kids), via)
	if len(acked) < 50 {
		t.Fatalf("only %d writes acknowledged: the ensemble did not keep serving", len(acked))
	}
	if len(lost) > 0 {
		t.Fatalf("%d acknowledged writes lost, e.g. %s", len(lost), strings.Join(lost[:min(5, len(lost))], " "))
	}
}

// roleOf returns a live server with the role.
func roleOf(c *launcher.Cluster, role string) members.ID {
	for _, st := range c.Status() {
		if st.Alive && st.Role == role {
			return st.ID
		}
	}
	return 0
}

// waitRole returns a live server with the role, waiting for one while an
// election runs (a change under load can cost a failover).
func waitRole(t *testing.T, c *launcher.Cluster, role string) members.ID {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if id := roleOf(c, role); id != members.None {
			return id
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s within 20s", role)
	return members.None
}

func serverAddr(t *testing.T, c *launcher.Cluster, id members.ID) string {
	for _, s := range c.Servers {
		if s.ID == id {
			return s.ClientAddr
		}
	}
	t.Fatalf("no server %d", id)
	return ""
}

// checkForest waits until every server reports the group that the forest,
// replayed from the ensemble's committed history of joins and departures,
// gives it, and that the committed voting groups are the forest's.
func checkForest(t *testing.T, c *launcher.Cluster) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		last = forestMismatch(c)
		if last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal(last)
}

func forestMismatch(c *launcher.Cluster) string {
	m, err := c.Membership(0)
	if err != nil {
		return err.Error()
	}
	fr, err := forestOf(m)
	if err != nil {
		return err.Error()
	}
	for g, members := range m.Groups {
		want := fr.Group(forest.Color(g))
		got := make([]forest.ServerID, len(members))
		for i, id := range members {
			got[i] = forest.ServerID(id)
		}
		sort.Slice(want, func(i, j int) bool { return want[i] < want[j] })
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		if fmt.Sprint(want) != fmt.Sprint(got) {
			return fmt.Sprintf("group %d votes %v, the forest of %q has %v", g, got, m.Forest, want)
		}
	}
	for _, st := range c.Status() {
		if !st.Alive {
			return fmt.Sprintf("server %d is down", st.ID)
		}
		want, ok := fr.Color(forest.ServerID(st.ID))
		if !ok || st.Color != int(want) {
			return fmt.Sprintf("server %d reports group %d, the forest of %q gives %d", st.ID, st.Color, m.Forest, want)
		}
	}
	return ""
}

// forestChanges parses a membership's history of joins (+id) and
// departures (-id).
func forestChanges(m adminapi.Membership) []forest.Change {
	var changes []forest.Change
	for _, f := range strings.Fields(m.Forest) {
		id, _ := strconv.Atoi(f[1:])
		op := forest.OpJoin
		if f[0] == '-' {
			op = forest.OpLeave
		}
		changes = append(changes, forest.Change{Op: op, Server: forest.ServerID(id), Addr: f[1:]})
	}
	return changes
}

// forestOf replays a membership's history, then more changes, into the
// forest of its shape.
func forestOf(m adminapi.Membership, more ...forest.Change) (*forest.Forest, error) {
	return forest.Replay(forest.Config{Trees: m.Trees, MaxChildren: m.Children}, append(forestChanges(m), more...))
}

// TestJoinWithMemberDown: a classic-3 ensemble with one acceptor killed
// takes a fourth server. Three of four must acknowledge the change, so it
// commits only with the joining server's acknowledgment: the joining server
// runs (as a learner) before the change is proposed; started only after the
// commit, it could never be counted and the ensemble would stall for good.
func TestJoinWithMemberDown(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	down := c.Servers[0].ID
	if down == leader {
		down = c.Servers[1].ID
	}
	if err := c.Kill(down); err != nil {
		t.Fatal(err)
	}
	s, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatalf("join with server %d down: %v", down, err)
	}
	m, err := c.Membership(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Groups) != 1 || len(m.Groups[0]) != 4 {
		t.Fatalf("groups after the join: %v", m.Groups)
	}
	// The ensemble still writes (three of four are up), through the new
	// server too.
	cl := zkConnect(t, []string{serverAddr(t, c, s.ID)})
	if _, err := cl.Create("/after-join", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
}
