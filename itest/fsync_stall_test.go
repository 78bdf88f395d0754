package itest

import (
	"context"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestFsyncStallOnLeaderKeepsClients stalls one fsync of the leader's log
// for 600 ms under write load from a client on every server. A slow disk
// is not a lost quorum: no client loses its connection (a write in flight
// then would fail with CONNECTIONLOSS), every write is acknowledged, and
// they go on once the disk answers. The session timeout (6 s) makes the
// servers' serving bound 2 s, well above the stall.
func TestFsyncStallOnLeaderKeepsClients(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var conns []*client.Conn
	for _, s := range c.Servers {
		cl, err := client.Connect(ctx, []string{s.ClientAddr}, client.WithSessionTimeout(6*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		conns = append(conns, cl)
	}
	if _, _, err := conns[0].Create(ctx, "/stall", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	var on []members.ID
	for _, s := range c.Servers {
		on = append(on, s.ID)
	}
	w := startWriters(ctx, conns, on, "/stall", 10*time.Second)
	time.Sleep(300 * time.Millisecond)
	if _, err := c.Fault(l, "stall-fsync 600ms"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	acked, errs := w.Stop()
	for _, err := range errs {
		t.Error(err)
	}
	if acked == 0 {
		t.Fatal("no write acknowledged")
	}
	t.Logf("%d writes acknowledged across the stall", acked)
}
