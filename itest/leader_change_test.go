package itest

import (
	"context"
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
			w := startWriters(ctx, conns, on, "/lk", 20*time.Second)
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
			total, errs := w.Stop()
			for _, err := range errs {
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
	w := startWriters(ctx, []*client.Conn{cl}, []members.ID{on}, "/q", 20*time.Second)
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
	writes, errs := w.Stop()
	for _, err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d writes acknowledged across the outage", writes)
}
