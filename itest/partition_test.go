package itest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestPartitionIsolatingTheLeader cuts the global leader off from every
// other server (through the transport's fault injection). The majority
// side elects a new leader and keeps taking writes; the isolated leader
// acknowledges none (a write sent to it is not answered while the
// partition lasts: its outcome is unknown to the client, and its server
// may order it once the partition heals, as a ZooKeeper follower may a
// request it forwarded before losing its leader); after the partition
// heals, the old leader follows the new history.
func TestPartitionIsolatingTheLeader(t *testing.T) {
	for _, sh := range []members.Shape{Classic3, Forest9x33} {
		t.Run(sh.String(), func(t *testing.T) {
			c := StartEnsemble(t, sh)
			old, err := Leader(c, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var oldAddr, otherAddr string
			for _, s := range c.Servers {
				if s.ID == old {
					oldAddr = s.ClientAddr
				} else if otherAddr == "" {
					otherAddr = s.ClientAddr
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			connect := func(addr string) *client.Conn {
				cl, err := client.Connect(ctx, []string{addr}, client.WithSessionTimeout(20*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cl.Close() })
				return cl
			}
			minority, majority := connect(oldAddr), connect(otherAddr)
			if _, _, err := majority.Create(ctx, "/p", nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Fault(old, "isolate"); err != nil {
				t.Fatal(err)
			}
			// The majority side carries on under a new leader.
			start := time.Now()
			var acked string
			for i := 0; ; i++ {
				wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
				acked = fmt.Sprintf("maj-%d", i)
				_, _, err := majority.Create(wctx, "/p/"+acked, nil, client.Persistent, zkproto.OpenACLUnsafe)
				wcancel()
				if err == nil {
					break
				}
				if time.Since(start) > 30*time.Second {
					t.Fatalf("majority side accepted no write after the leader was isolated: %v", err)
				}
			}
			t.Logf("majority side writes again %v after the isolation", time.Since(start))
			// The minority side (the old leader alone) refuses: the write
			// does not succeed.
			wctx, wcancel := context.WithTimeout(ctx, 3*time.Second)
			_, _, err = minority.Create(wctx, "/p/min", nil, client.Persistent, zkproto.OpenACLUnsafe)
			wcancel()
			if err == nil {
				t.Fatal("the isolated old leader acknowledged a write")
			}
			t.Logf("isolated old leader: write failed with %v", err)
			if _, err := c.Fault(old, "heal"); err != nil {
				t.Fatal(err)
			}
			// After healing, the old leader's server serves the new history
			// (synced read), the majority's writes in it.
			check := connect(oldAddr)
			deadline := time.Now().Add(30 * time.Second)
			for {
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := check.Sync(cctx, "/p")
				var kids []string
				if err == nil {
					kids, _, err = check.Children(cctx, "/p")
				}
				ccancel()
				if err == nil && slices.Contains(kids, acked) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("old leader did not rejoin: %v", err)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}
