package embed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/testport"
	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/recipes"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func startStandalone(t *testing.T, dir string) *Server {
	t.Helper()
	cfg := Standalone(dir)
	cfg.ForceSync = false
	s, err := Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func connect(t *testing.T, s *Server) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := s.Connect(ctx, client.WithSessionTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestInProcessLockAndBarrier: goroutines of one program, each with its own
// in-process session, take a queue lock in turn (never two at once) and
// wait on a barrier that a remote TCP client lowers; what they wrote is
// there after a restart from the same directory.
func TestInProcessLockAndBarrier(t *testing.T) {
	dir := t.TempDir()
	s := startStandalone(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	barrier := recipes.NewBarrier(connect(t, s), "/ready")
	if err := barrier.Create(ctx); err != nil {
		t.Fatal(err)
	}
	const workers = 8
	var holders, maxHolders atomic.Int32
	var passed atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for i := range workers {
		conn := connect(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := recipes.NewBarrier(conn, "/ready").Wait(ctx); err != nil {
				errs <- err
				return
			}
			passed.Add(1)
			lock := recipes.NewQueueLock(conn, "/locks/work")
			for j := range 5 {
				if err := lock.Lock(ctx); err != nil {
					errs <- err
					return
				}
				n := holders.Add(1)
				maxHolders.Store(max(maxHolders.Load(), n))
				_, _, err := conn.Create(ctx, fmt.Sprintf("/done-%d-%d", i, j), nil, client.Persistent, zkproto.OpenACLUnsafe)
				time.Sleep(time.Millisecond)
				holders.Add(-1)
				if err := errors.Join(err, lock.Unlock(ctx)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if n := passed.Load(); n != 0 {
		t.Fatalf("%d workers passed the raised barrier", n)
	}
	// Another process would use the client port: lower the barrier from
	// a TCP session.
	remote, err := client.Connect(ctx, []string{s.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if up, err := recipes.NewBarrier(remote, "/ready").Remove(ctx); err != nil || !up {
		t.Fatalf("remove: up=%v err=%v", up, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if m := maxHolders.Load(); m != 1 {
		t.Fatalf("%d holders at once", m)
	}

	s.Close()
	s2 := startStandalone(t, dir)
	kids, _, err := connect(t, s2).Children(ctx, "/")
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for _, k := range kids {
		if len(k) > 5 && k[:5] == "done-" {
			done++
		}
	}
	if done != workers*5 {
		t.Fatalf("after restart: %d done nodes, want %d (%v)", done, workers*5, kids)
	}
}

// TestConnectAfterClose: dialing a stopped server fails instead of
// hanging, and a session open at Close sees its connection end.
func TestConnectAfterClose(t *testing.T) {
	s := startStandalone(t, t.TempDir())
	c := connect(t, s)
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, _, err := c.Get(ctx, "/"); err == nil {
		t.Fatal("a read after Close succeeded")
	}
	if _, err := s.Connect(ctx); err == nil {
		t.Fatal("Connect to a closed server succeeded")
	}
}

// freePorts returns n distinct free TCP ports of 127.0.0.1.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	base, err := testport.Range(n)
	if err != nil {
		t.Fatal(err)
	}
	ports := make([]int, n)
	for i := range ports {
		ports[i] = base + i
	}
	return ports
}

// TestEnsembleMembers: three programs' worth of embedded servers form a
// classic ensemble over real TCP between them; a write through one
// member's in-process session is read, after a sync, through another's,
// and a lock taken in-process on one member excludes a contender on
// another.
func TestEnsembleMembers(t *testing.T) {
	ports := freePorts(t, 3)
	var peers []server.Member
	for i, p := range ports {
		peers = append(peers, server.Member{ID: server.ID(i + 1), Peer: fmt.Sprintf("127.0.0.1:%d", p)})
	}
	var members []*Server
	for i := range peers {
		cfg := Standalone(t.TempDir())
		cfg.ForceSync = false
		cfg.TickTime = 100 * time.Millisecond
		cfg.ServerID = server.ID(i + 1)
		cfg.Ensemble = server.Ensemble{Members: peers, Shape: server.Shape{Classic: true}, Tick: 10 * time.Millisecond}
		s, err := Start(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		members = append(members, s)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := connect(t, members[0]), connect(t, members[2])
	if _, _, err := a.Create(ctx, "/x", []byte("1"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Sync(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := b.Get(ctx, "/x"); err != nil || string(d) != "1" {
		t.Fatalf("read through member 3: %q %v", d, err)
	}

	la := recipes.NewQueueLock(a, "/locks/l")
	if err := la.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	lb := recipes.NewQueueLock(b, "/locks/l")
	go func() { got <- lb.Lock(ctx) }()
	select {
	case err := <-got:
		t.Fatalf("second member's contender got the held lock (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestJoinRunningEnsemble: an embedded server joins a running classic-3
// ensemble of server processes, reads through its in-process session what
// was written before it joined, and what it writes is read through another
// member; the ensemble then counts it among its voters.
func TestJoinRunningEnsemble(t *testing.T) {
	c := itest.StartEnsemble(t, itest.Classic3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	remote := func(i int) *client.Conn {
		conn, err := client.Connect(ctx, []string{c.Servers[i].ClientAddr}, client.WithSessionTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	if _, _, err := remote(0).Create(ctx, "/before", []byte("1"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}

	// The ports StartEnsemble keeps free after the members' for a joiner,
	// and the ensemble's admin token, which the join presents.
	base := c.JoinPorts(0)
	cfg := Standalone(t.TempDir())
	cfg.ForceSync = false
	cfg.ClientPort, cfg.MetricsPort, cfg.AdminPort = base, base+2, base+3
	cfg.AdminTokenFile = launcher.TokenFile(c.Spec.Dir)
	s, err := Join(ctx, cfg, server.Join{Admin: c.Servers[1].AdminAddr, PeerPort: base + 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	local := connect(t, s)
	if _, err := local.Sync(ctx, "/before"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := local.Get(ctx, "/before"); err != nil || string(d) != "1" {
		t.Fatalf("the joined server reads /before as %q, %v", d, err)
	}
	if _, _, err := local.Create(ctx, "/after", []byte("2"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	other := remote(2)
	if _, err := other.Sync(ctx, "/after"); err != nil {
		t.Fatal(err)
	}
	if d, _, err := other.Get(ctx, "/after"); err != nil || string(d) != "2" {
		t.Fatalf("member 3 reads /after as %q, %v", d, err)
	}
	m, err := c.Membership(members.None)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Groups) != 1 || len(m.Groups[0]) != 4 || !slices.Contains(m.Groups[0], members.ID(4)) {
		t.Fatalf("voters after the join: %v, want servers 1 to 4", m.Groups)
	}
}
