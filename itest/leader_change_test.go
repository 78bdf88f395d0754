package itest

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestLeaderKillKeepsSurvivingClients kills the leader (SIGKILL) under
// write load from clients on the other servers. Their servers resend what
// was in flight once a new leader's first entry commits, so those clients
// see no error at all, not even CONNECTIONLOSS: each of their writes is
// acknowledged, once, after a pause. Their session timeout (10 s) keeps
// their servers' serving bound above the election.
func TestLeaderKillKeepsSurvivingClients(t *testing.T) {
	for _, sh := range []members.Shape{Classic3, Forest9x33} {
		t.Run(sh.String(), func(t *testing.T) {
			c := StartEnsemble(t, sh)
			l, err := Leader(c, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			var conns []*client.Conn
			var on []members.ID
			for _, s := range c.Servers {
				if s.ID == l || len(conns) == 3 {
					continue
				}
				cl, err := client.Connect(ctx, []string{s.ClientAddr}, client.WithSessionTimeout(10*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				defer cl.Close()
				conns, on = append(conns, cl), append(on, s.ID)
			}
			if _, _, err := conns[0].Create(ctx, "/lk", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
				t.Fatal(err)
			}
			stop := make(chan struct{})
			errs := make(chan error, len(conns))
			counts := make([]int, len(conns))
			var wg sync.WaitGroup
			for i, cl := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for n := 0; ; n++ {
						select {
						case <-stop:
							return
						default:
						}
						wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
						_, _, err := cl.Create(wctx, fmt.Sprintf("/lk/c%d-%d", i, n), nil, client.Persistent, zkproto.OpenACLUnsafe)
						wcancel()
						if err != nil {
							errs <- fmt.Errorf("client on server %d, write %d: %w", on[i], n, err)
							return
						}
						counts[i] = n + 1
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			if err := c.Kill(l); err != nil {
				t.Fatal(err)
			}
			// Long enough for an election and for the writes to go on.
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				if nl, err := Leader(c, time.Second); err == nil && nl != l {
					break
				}
			}
			time.Sleep(time.Second)
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			// Every acknowledged create is there (a synced read), once (a
			// create cannot be applied twice).
			if _, err := conns[0].Sync(ctx, "/lk"); err != nil {
				t.Fatal(err)
			}
			kids, _, err := conns[0].Children(ctx, "/lk")
			if err != nil {
				t.Fatal(err)
			}
			total := 0
			for _, n := range counts {
				total += n
			}
			if len(kids) < total {
				t.Fatalf("%d children, %d creates acknowledged", len(kids), total)
			}
			t.Logf("%d writes acknowledged across the leader kill", total)
		})
	}
}

// TestQuorumOutageWithinBoundKeepsClients stops (SIGSTOP) both other
// servers of a classic-3 ensemble for 2.5 s while a client with a 10 s
// session writes through the third. Its server stays within its serving
// bound (a third of the session timeout) throughout, so the client must
// see a pause and no error: its write in flight is acknowledged once a
// quorum is back.
func TestQuorumOutageWithinBoundKeepsClients(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var on members.ID
	var others []members.ID
	for _, s := range c.Servers {
		if s.ID != l && on == 0 {
			on = s.ID
		} else {
			others = append(others, s.ID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, []string{c.Servers[on-1].ClientAddr}, client.WithSessionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, err := cl.Create(ctx, "/q", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error, 1)
	var writes int
	go func() {
		for n := 0; ; n++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, _, err := cl.Create(ctx, fmt.Sprintf("/q/c%d", n), nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
				done <- fmt.Errorf("write %d: %w", n, err)
				return
			}
			writes = n + 1
		}
	}()
	time.Sleep(200 * time.Millisecond)
	for _, id := range others {
		if err := c.Signal(id, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2500 * time.Millisecond)
	for _, id := range others {
		if err := c.Signal(id, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("%d writes acknowledged across the outage", writes)
}
