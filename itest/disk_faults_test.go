package itest

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestDiskFaultsLoseNoAcknowledgedWrite is the replaced-disk scenario on
// real processes, with each way a disk or an operator loses a server's
// durable state. Classic-3: X is cut off; a write W is acknowledged (by the
// leader L and the follower F); L and F are killed; F's state is damaged;
// F restarts and X is healed. F must not count: F and X elect no leader
// (a leader whose history lacks W would lose it everywhere). L comes back;
// W is on all three servers, and F, registered anew, votes again.
func TestDiskFaultsLoseNoAcknowledgedWrite(t *testing.T) {
	damages := []struct {
		name   string
		damage func(t *testing.T, replica string)
	}{
		{"replaced disk", func(t *testing.T, replica string) {
			// The data directory's myid and zoo.cfg stay, as when the
			// disk holding the replica's state is swapped.
			if err := os.RemoveAll(replica); err != nil {
				t.Fatal(err)
			}
		}},
		{"hard state deleted", func(t *testing.T, replica string) {
			if err := os.Remove(filepath.Join(replica, "hardstate")); err != nil {
				t.Fatal(err)
			}
		}},
		{"last record damaged", func(t *testing.T, replica string) {
			segs, _ := filepath.Glob(filepath.Join(replica, "log", "log.*"))
			sort.Strings(segs)
			if len(segs) == 0 {
				t.Fatal("no log segment")
			}
			p := segs[len(segs)-1]
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)-3] ^= 0x04 // inside the payload of the last record
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"record before others damaged", func(t *testing.T, replica string) {
			// The oldest segment's first record, which valid records follow:
			// damage at rest to what may have been acknowledged, not a
			// torn tail.
			segs, _ := filepath.Glob(filepath.Join(replica, "log", "log.*"))
			sort.Strings(segs)
			if len(segs) == 0 {
				t.Fatal("no log segment")
			}
			p := segs[0]
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			const segHeader, recHeader = 32, 20
			if len(b) < segHeader+recHeader {
				t.Fatal("no record in the oldest segment")
			}
			n := int(binary.LittleEndian.Uint32(b[segHeader+4:]))
			if len(b) <= segHeader+recHeader+n+recHeader {
				t.Fatal("no record after the oldest segment's first")
			}
			b[segHeader+recHeader+n/2] ^= 0x10
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			c := StartEnsemble(t, Classic3)
			l, err := Leader(c, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			waitRegistered(t, c, 10*time.Second)
			var f, x launcher.Server
			for _, s := range c.Servers {
				switch {
				case s.ID == l:
				case f.ID == 0:
					f = s
				default:
					x = s
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := c.Fault(x.ID, "isolate"); err != nil {
				t.Fatal(err)
			}
			cl, err := client.Connect(ctx, []string{serverAddr(t, c, l)}, client.WithSessionTimeout(20*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := cl.Create(ctx, "/w", []byte("acknowledged"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
				t.Fatal(err)
			}
			cl.Close()
			if err := c.Kill(l); err != nil {
				t.Fatal(err)
			}
			if err := c.Kill(f.ID); err != nil {
				t.Fatal(err)
			}
			d.damage(t, filepath.Join(f.Dir, "data", "replica"))
			if err := c.Restart(f.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Fault(x.ID, "heal"); err != nil {
				t.Fatal(err)
			}
			// Many election timeouts (the ensemble's is 200 ms): F's votes
			// must count for nothing, so F and X have no quorum.
			deadline := time.Now().Add(3 * time.Second)
			for time.Now().Before(deadline) {
				for _, st := range c.Status() {
					if st.Alive && st.Role == "leader" {
						t.Fatalf("server %d leads without the write's holder: %+v", st.ID, c.Status())
					}
				}
				time.Sleep(50 * time.Millisecond)
			}
			if err := c.Restart(l); err != nil {
				t.Fatal(err)
			}
			for _, s := range c.Servers {
				rd, err := client.Connect(ctx, []string{s.ClientAddr}, client.WithSessionTimeout(20*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				var data []byte
				for {
					cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
					_, err = rd.Sync(cctx, "/")
					if err == nil {
						data, _, err = rd.Get(cctx, "/w")
					}
					ccancel()
					if err == nil || ctx.Err() != nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				rd.Close()
				if err != nil || string(data) != "acknowledged" {
					t.Fatalf("server %d: /w = %q, %v: the acknowledged write is lost", s.ID, data, err)
				}
			}
			waitRegistered(t, c, 20*time.Second)
		})
	}
}

// TestRegisteredServerVotesAfterRestart: in classic-3, follower F loses
// its hard state and is registered anew; then F and the leader L are
// killed together, L's hard state is deleted, and both restart. F knew its
// registration committed, and must still know it after the restart
// (without it F counts its own votes for nobody until a leader tells it,
// and with L recovering as well only the third server would vote: no
// leader, for good). F and the third server elect a leader, L is
// registered anew, and writes go on with the write made before.
func TestRegisteredServerVotesAfterRestart(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, 10*time.Second)
	var f, leader launcher.Server
	for _, s := range c.Servers {
		switch {
		case s.ID == l:
			leader = s
		case f.ID == 0:
			f = s
		}
	}
	hardState := func(s launcher.Server) string { return filepath.Join(s.Dir, "data", "replica", "hardstate") }
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hardState(f)); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createAcknowledged(ctx, t, serverAddr(t, c, l), "/before")
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(l); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hardState(leader)); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(l); err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, 30*time.Second)
	checkEveryServerServes(ctx, t, c, "/before", "restarts")
}

// createAcknowledged creates path with the data "acknowledged" through the
// server at addr, and waits for the reply.
func createAcknowledged(ctx context.Context, t *testing.T, addr, path string) {
	t.Helper()
	cl, err := client.Connect(ctx, []string{addr}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, err := cl.Create(ctx, path, []byte("acknowledged"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
}

// checkEveryServerServes connects to every server in turn: each must hold
// path with the data "acknowledged" after a sync, and take a write; after
// says what happened before, for the failure message.
func checkEveryServerServes(ctx context.Context, t *testing.T, c *launcher.Cluster, path, after string) {
	t.Helper()
	for _, s := range c.Servers {
		rd, err := client.Connect(ctx, []string{s.ClientAddr}, client.WithSessionTimeout(20*time.Second))
		if err != nil {
			t.Fatalf("server %d: %v", s.ID, err)
		}
		if _, err := rd.Sync(ctx, "/"); err != nil {
			t.Fatalf("server %d: sync: %v", s.ID, err)
		}
		if data, _, err := rd.Get(ctx, path); err != nil || string(data) != "acknowledged" {
			t.Fatalf("server %d: %s = %q, %v", s.ID, path, data, err)
		}
		if _, _, err := rd.Create(ctx, fmt.Sprintf("/after-%d", s.ID), nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatalf("server %d: write after the %s: %v", s.ID, after, err)
		}
		rd.Close()
	}
}

// startRegistered starts an ensemble (see StartEnsemble) and waits for
// its leader, which it returns, and for every server to be registered.
func startRegistered(t *testing.T, sh members.Shape, extra ...string) (*launcher.Cluster, members.ID) {
	t.Helper()
	c := StartEnsemble(t, sh, extra...)
	l, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	waitRegistered(t, c, 20*time.Second)
	return c, l
}

// waitRegistered waits until every live server's votes count under a
// configuration that registers its incarnation.
func waitRegistered(t *testing.T, c *launcher.Cluster, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok := true
		for _, st := range c.Status() {
			if st.Alive && st.Registration != "registered" {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers not registered: %+v", c.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestGroupThatLostItsStateRecovers: in forest-9-3-3, the three servers of
// one group (not the leader's) are killed and restarted with their hard
// state deleted. Each sets its state aside and starts empty, recovering:
// none votes, so the group cannot elect a coordinator until the others
// (two groups of three, a quorum) register the new incarnations, and each
// must first learn of a leader to ask. The leader finds the group again by
// probing it; every server ends registered, serving, with the write made
// before, and the group's servers take writes again.
func TestGroupThatLostItsStateRecovers(t *testing.T) {
	c, l := startRegistered(t, Forest9x33)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	createAcknowledged(ctx, t, serverAddr(t, c, l), "/before")
	leaderGroup := -1
	groups := map[int][]launcher.Server{}
	for _, st := range c.Status() {
		if st.ID == l {
			leaderGroup = st.Color
		}
		for _, s := range c.Servers {
			if s.ID == st.ID {
				groups[st.Color] = append(groups[st.Color], s)
			}
		}
	}
	var lost []launcher.Server
	for g, ss := range groups {
		if g != leaderGroup && g >= 0 && len(ss) == 3 {
			lost = ss
			break
		}
	}
	if lost == nil {
		t.Fatalf("no group of three without the leader: %+v", c.Status())
	}
	for _, s := range lost {
		if err := c.Kill(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range lost {
		if err := os.Remove(filepath.Join(s.Dir, "data", "replica", "hardstate")); err != nil {
			t.Fatal(err)
		}
		if err := c.Restart(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	waitRegistered(t, c, time.Minute)
	checkEveryServerServes(ctx, t, c, "/before", "group's recovery")
}
