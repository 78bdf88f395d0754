package itest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// zkConnect opens a go-zookeeper session on the given servers (shuffling
// off: the first is used first) and waits for it.
func zkConnect(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	return zkConnectTimeout(t, servers, 4*time.Second)
}

// zkConnectTimeout is zkConnect with a session timeout.
func zkConnectTimeout(t testing.TB, servers []string, timeout time.Duration) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(servers, timeout, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session with %v", servers)
		}
	}
	return c
}

func addrs(c *launcher.Cluster) []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.ClientAddr
	}
	return out
}

// TestEnsembleServesEveryServer: clients on every server of a classic-3 and
// a forest 9-3-3 ensemble see one tree: a write through one server is read
// (after sync) through every other, ephemerals of one server's session are
// seen everywhere, and a watch set through one server fires for a write
// through another.
func TestEnsembleServesEveryServer(t *testing.T) {
	for _, sh := range []members.Shape{Classic3, Forest9x33} {
		t.Run(sh.String(), func(t *testing.T) {
			c := StartEnsemble(t, sh)
			all := addrs(c)
			conns := make([]*zk.Conn, len(all))
			for i, a := range all {
				conns[i] = zkConnect(t, []string{a})
			}
			if _, err := conns[0].Create("/e", []byte("v0"), 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			// Plain reads may lag (sequential consistency): sync first.
			if _, err := conns[len(conns)-1].Sync("/e"); err != nil {
				t.Fatal(err)
			}
			_, _, wch, err := conns[len(conns)-1].GetW("/e")
			if err != nil {
				t.Fatal(err)
			}
			for i, cn := range conns {
				if _, err := cn.Create(fmt.Sprintf("/e/eph-%d", i), nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatalf("server %d: %v", i+1, err)
				}
			}
			if _, err := conns[1].Set("/e", []byte("v1"), 0); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-wch:
				if ev.Type != zk.EventNodeDataChanged || ev.Path != "/e" {
					t.Fatalf("watch event %+v", ev)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("watch set on the last server did not fire for a write through server 2")
			}
			for i, cn := range conns {
				if _, err := cn.Sync("/e"); err != nil {
					t.Fatalf("sync on server %d: %v", i+1, err)
				}
				data, st, err := cn.Get("/e")
				if err != nil || string(data) != "v1" || st.Version != 1 {
					t.Fatalf("server %d after sync: %q %+v %v", i+1, data, st, err)
				}
				kids, _, err := cn.Children("/e")
				if err != nil || len(kids) != len(conns) {
					t.Fatalf("server %d sees %d ephemerals (%v), want %d", i+1, len(kids), err, len(conns))
				}
			}
			// Closing a session removes its ephemeral everywhere.
			conns[0].Close()
			cn := conns[len(conns)-1]
			deadline := time.Now().Add(10 * time.Second)
			for {
				cn.Sync("/e")
				if ok, _, _ := cn.Exists("/e/eph-0"); !ok {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("ephemeral of a closed session still there")
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}

// TestEnsembleSessionMovesToAnotherServer: a client whose server is killed
// reconnects to another one with the same session; its ephemeral node and
// its watch survive. (Giraffe's own client, so that the server order is
// fixed and the first connection goes to the server the test kills.)
func TestEnsembleSessionMovesToAnotherServer(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	all := addrs(c)
	victim := c.Servers[4]
	order := append([]string{victim.ClientAddr}, all[:4]...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, order, client.WithoutShuffle(), client.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if cl.Server() != victim.ClientAddr {
		t.Fatalf("client connected to %s, not %s", cl.Server(), victim.ClientAddr)
	}
	sid := cl.SessionID()
	if _, _, err := cl.Create(ctx, "/mine", nil, client.Ephemeral, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	_, wch, err := cl.ExistsW(ctx, "/other")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(victim.ID); err != nil {
		t.Fatal(err)
	}
	other := zkConnect(t, []string{all[0]})
	if _, err := other.Create("/other", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-wch:
		if e.Type != zkproto.EventNodeCreated {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("watch lost when the session moved")
	}
	if cl.SessionID() != sid || cl.Server() == victim.ClientAddr {
		t.Fatalf("session %x on %s after the move (was %x)", cl.SessionID(), cl.Server(), sid)
	}
	if _, err := cl.Sync(ctx, "/mine"); err != nil {
		t.Fatal(err)
	}
	if st, err := cl.Exists(ctx, "/mine"); err != nil || st == nil {
		t.Fatalf("ephemeral of the moved session gone: %v %v", st, err)
	}
}

// TestEnsembleKillsUnderLoadLoseNothing kills the global leader, then a
// group coordinator, then an acceptor, each under concurrent write load,
// and checks that every acknowledged write is there at the end.
func TestEnsembleKillsUnderLoadLoseNothing(t *testing.T) {
	for _, sh := range []members.Shape{Classic3, Forest9x33} {
		t.Run(sh.String(), func(t *testing.T) {
			c := StartEnsemble(t, sh)
			all := addrs(c)
			setup := zkConnect(t, all)
			if _, err := setup.Create("/load", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			acked := map[string]bool{}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < 6; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					// Each writer starts on a different server.
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
			kill := func(what string, pick func([]launcher.Status) members.ID) {
				time.Sleep(700 * time.Millisecond)
				id := pick(c.Status())
				if id == 0 {
					t.Fatalf("no %s to kill", what)
				}
				t.Logf("killing %s: server %d", what, id)
				if err := c.Kill(id); err != nil {
					t.Fatal(err)
				}
				if _, err := Leader(c, 20*time.Second); err != nil {
					t.Fatalf("after killing the %s: %v", what, err)
				}
			}
			role := func(r string) func([]launcher.Status) members.ID {
				return func(sts []launcher.Status) members.ID {
					for _, s := range sts {
						if s.Alive && s.Role == r {
							return s.ID
						}
					}
					return 0
				}
			}
			kill("leader", role("leader"))
			if !sh.Classic {
				kill("coordinator", role("coordinator"))
			}
			if sh.Nodes > 3 {
				kill("acceptor", role("acceptor"))
			}
			time.Sleep(700 * time.Millisecond)
			close(stop)
			wg.Wait()
			check := zkConnect(t, all)
			var kids []string
			deadline := time.Now().Add(20 * time.Second)
			for {
				_, err := check.Sync("/load")
				if err == nil {
					kids, _, err = check.Children("/load")
				}
				if err == nil || time.Now().After(deadline) {
					if err != nil {
						t.Fatal(err)
					}
					break
				}
				time.Sleep(50 * time.Millisecond)
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
			t.Logf("%d acknowledged writes, %d nodes present", len(acked), len(kids))
			if len(acked) < 50 {
				t.Fatalf("only %d writes acknowledged: the ensemble did not keep serving", len(acked))
			}
			if len(lost) > 0 {
				t.Fatalf("%d acknowledged writes lost, e.g. %s", len(lost), strings.Join(lost[:min(5, len(lost))], " "))
			}
		})
	}
}

// TestClusterStatusMatchesTheForest: the groups (colors) that `giraffe
// cluster status` reports for a running 9-3-3 ensemble are exactly the
// colors `giraffe topology` computes with the forest algorithms.
func TestClusterStatusMatchesTheForest(t *testing.T) {
	c := StartEnsemble(t, Forest9x33)
	bin, _ := Binary()
	out, err := exec.Command(bin, "topology", "--nodes", "9", "--trees", "3", "--children", "3", "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var topo struct {
		Nodes []struct {
			ID    members.ID
			Color int
		} `json:"nodes"`
	}
	if err := json.Unmarshal(out, &topo); err != nil {
		t.Fatal(err)
	}
	want := map[members.ID]int{}
	for _, n := range topo.Nodes {
		want[n.ID] = n.Color
	}
	out, err = exec.Command(bin, "cluster", "status", "--dir", c.Spec.Dir, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []launcher.Status
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	roles := map[string]int{}
	for _, r := range rows {
		if !r.Alive || r.Color != want[r.ID] {
			t.Fatalf("server %d: alive %v color %d, forest says %d", r.ID, r.Alive, r.Color, want[r.ID])
		}
		roles[r.Role]++
	}
	if roles["leader"] != 1 || roles["leader"]+roles["coordinator"] != 3 {
		t.Fatalf("roles %v: want one leader and one coordinator per group", roles)
	}
}
