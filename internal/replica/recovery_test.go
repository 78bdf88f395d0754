package replica

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// seedStorage creates the storage of server 1 in dir with a promise, a few
// entries and, when installed is set, a snapshot installed from a peer
// (after which the log before it is gone), and stops it cleanly.
func seedStorage(t *testing.T, dir string, installed bool) identity {
	t.Helper()
	st, _, err := openStorage(dir, false, quiet, grid(1, 3), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := gpaxos.HardState{Promised: 2, Leader: 2, Current: 2, Commit: gpaxos.MakeZxid(2, 1)}
	rd := gpaxos.Ready{HardState: &hs}
	for i := uint32(1); i <= 3; i++ {
		rd.Entries = append(rd.Entries, gpaxos.Entry{Zxid: gpaxos.MakeZxid(2, i), Data: []byte("entry")})
	}
	if err := st.persist(&rd); err != nil {
		t.Fatal(err)
	}
	if installed {
		sn := gpaxos.Snapshot{Index: gpaxos.MakeZxid(3, 5), Voters: grid(1, 3), Data: []byte("tree")}
		rd := gpaxos.Ready{Snapshot: &sn, Entries: []gpaxos.Entry{{Zxid: gpaxos.MakeZxid(3, 6), Data: []byte("after")}}}
		if err := st.persist(&rd); err != nil {
			t.Fatal(err)
		}
	}
	id := st.id
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestStorageRecognizesLostState damages a stopped replica's directory the
// ways disks and operators do, and checks what opening it finds.
func TestStorageRecognizesLostState(t *testing.T) {
	newestSegment := func(dir string) string {
		segs, _ := filepath.Glob(filepath.Join(dir, "log", "log.*"))
		sort.Strings(segs)
		return segs[len(segs)-1]
	}
	flipLast := func(dir string) {
		p := newestSegment(dir)
		b, _ := os.ReadFile(p)
		b[len(b)-2] ^= 0x20
		os.WriteFile(p, b, 0o644)
	}
	cases := []struct {
		name      string
		installed bool
		damage    func(t *testing.T, dir string)
		lost      bool // set aside and recovering
		newInc    bool // another incarnation
	}{
		{"clean restart", false, func(*testing.T, string) {}, false, false},
		{"crash leaves a short record", false, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "clean"))
			p := newestSegment(dir)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}, false, false},
		{"wiped directory", false, func(t *testing.T, dir string) {
			os.RemoveAll(dir)
		}, false, true},
		{"hard state deleted", false, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "hardstate"))
		}, true, true},
		{"hard state damaged", false, func(t *testing.T, dir string) {
			p := filepath.Join(dir, "hardstate")
			b, _ := os.ReadFile(p)
			b[6] ^= 1
			os.WriteFile(p, b, 0o644)
		}, true, true},
		{"bit flip in the last record", false, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "clean"))
			flipLast(dir)
		}, true, true},
		{"bit flip in a record before others", false, func(t *testing.T, dir string) {
			// The first record's payload (segment header 32 bytes, record
			// header 20, entry type 1): the records after it stay valid,
			// so this is not a torn tail but damage to what may have been
			// acknowledged.
			p := newestSegment(dir)
			b, _ := os.ReadFile(p)
			b[32+20+2] ^= 0x20
			os.WriteFile(p, b, 0o644)
		}, true, true},
		{"marked for a resync", false, func(t *testing.T, dir string) {
			if err := MarkForResync(dir, "a digest disagreed"); err != nil {
				t.Fatal(err)
			}
		}, true, true},
		{"short record after a clean stop", false, func(t *testing.T, dir string) {
			p := newestSegment(dir)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-3], 0o644)
		}, true, true},
		{"installed snapshot unreadable", true, func(t *testing.T, dir string) {
			snaps, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*"))
			for _, p := range snaps {
				b, _ := os.ReadFile(p)
				b[len(b)-1] ^= 1
				os.WriteFile(p, b, 0o644)
			}
		}, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			before := seedStorage(t, dir, c.installed)
			c.damage(t, dir)
			st, rec, err := openStorage(dir, false, quiet, grid(1, 3), 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.close()
			if got := rec.lost != ""; got != c.lost {
				t.Fatalf("lost = %q, want lost %v", rec.lost, c.lost)
			}
			if st.id.Recovering != c.lost {
				t.Fatalf("recovering = %v, want %v", st.id.Recovering, c.lost)
			}
			if got := st.id.Incarnation != before.Incarnation; got != c.newInc {
				t.Fatalf("new incarnation = %v, want %v", got, c.newInc)
			}
			if c.lost {
				if rec.hs != (gpaxos.HardState{}) || len(rec.entries) != 0 || rec.snap != nil {
					t.Fatalf("lost state not set aside: %+v", rec)
				}
				if aside, _ := filepath.Glob(filepath.Join(dir, "lost-*", "log")); len(aside) != 1 {
					t.Fatalf("damaged state not kept for inspection")
				}
			} else if !c.newInc && (rec.hs.Promised != 2 || len(rec.entries) == 0) {
				t.Fatalf("state not recovered: %+v", rec)
			}
			// The start count grows even across a new incarnation's first
			// start, and is durable.
			if st.id.Boots == 0 || !c.newInc && st.id.Boots != before.Boots+1 {
				t.Fatalf("boots %d after %d", st.id.Boots, before.Boots)
			}
		})
	}
}

// TestWipedFollowerCannotUndoACommit is the replaced-disk scenario: a write
// committed by the leader and one follower while the other was cut off;
// both stop, the follower's disk is replaced, and it comes back with the
// cut-off server. Its empty log must not count: the two must not elect a
// leader whose history lacks the write, and once the old leader is back the
// write is everywhere, the new disk included.
func TestWipedFollowerCannotUndoACommit(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	l := c.leader()
	c.waitRegistered()
	var f, x gpaxos.ID
	for _, id := range []gpaxos.ID{1, 2, 3} {
		if id == l.cfg.ID {
			continue
		}
		if f == 0 {
			f = id
		} else {
			x = id
		}
	}
	c.cut(x, true)
	c.proposeRetry(l, "w")
	c.waitDelivered([]gpaxos.ID{l.cfg.ID, f}, "w")
	c.stop(l.cfg.ID)
	c.stop(f)
	if err := os.RemoveAll(c.dirs[f]); err != nil {
		t.Fatal(err)
	}
	c.start(f, gpaxos.StarTopology{})
	c.cut(x, false)
	// Many election timeouts: F and X must not find a leader.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		for _, id := range []gpaxos.ID{f, x} {
			if st := c.rep(id).Status(); st.Role == RoleLeader {
				t.Fatalf("server %d leads epoch %d without the write's holder", id, st.Epoch)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.start(l.cfg.ID, gpaxos.StarTopology{})
	c.waitDelivered([]gpaxos.ID{1, 2, 3}, "w")
	c.waitRegistered()
	c.proposeRetry(c.leader(), "after")
	c.waitDelivered([]gpaxos.ID{1, 2, 3}, "after")
}

// waitRegistered waits until every running replica votes under a
// configuration that registers its incarnation.
func (c *cluster) waitRegistered() {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		for _, r := range c.all() {
			if st := r.Status(); !st.Registered || st.Recovering {
				ok = false
			}
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatal("replicas not registered")
}

// waitDelivered waits until each of ids delivered body.
func (c *cluster) waitDelivered(ids []gpaxos.ID, body string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		ok := true
		c.mu.Lock()
		for _, id := range ids {
			if !slices.Contains(c.got[id], body) && !slices.ContainsFunc(c.got[id], func(s string) bool { return len(s) > 5 && s[:5] == "snap:" }) {
				ok = false
			}
		}
		c.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t.Fatalf("%q not delivered to all of %v: %v", body, ids, c.got)
}

func (c *cluster) cut(id gpaxos.ID, cut bool) {
	c.nw.mu.Lock()
	c.nw.cut[id] = cut
	c.nw.mu.Unlock()
}

func (c *cluster) stop(id gpaxos.ID) { c.rep(id).Stop() }

var _ = quorum.Config{}

// TestLeaderChangeResendsExactlyOnce stops the leader while a follower has
// proposals in flight: the follower resends what the old leader's epoch did
// not commit, on a new stream, once the new leader's first entry commits.
// Every proposal commits exactly once, in the order it was made, and none
// is abandoned (the server's clients would have been disconnected).
func TestLeaderChangeResendsExactlyOnce(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	l := c.leader()
	var f *Replica
	for id, r := range c.all() {
		if id != l.cfg.ID {
			f = r
			break
		}
	}
	c.proposeRetry(f, "warm")
	const n = 300
	var want []string
	for i := 0; i < n; i++ {
		body := fmt.Sprintf("p%03d", i)
		want = append(want, body)
		if err := f.Propose([]byte(body), nil); err != nil {
			t.Fatal(err)
		}
		if i == n/3 {
			c.stop(l.cfg.ID)
		}
		time.Sleep(time.Millisecond)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c.mu.Lock()
		got := slices.Clone(c.got[f.cfg.ID])
		aband := c.aband[f.cfg.ID]
		c.mu.Unlock()
		var mine []string
		for _, s := range got {
			if len(s) == 4 && s[0] == 'p' {
				mine = append(mine, s)
			}
		}
		if aband != 0 {
			t.Fatalf("%d abandonments", aband)
		}
		if len(mine) >= n {
			if !slices.Equal(mine, want) {
				t.Fatalf("committed %d proposals, not each once in order: %v", len(mine), mine)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d proposals committed", len(mine), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestLeaderHearsProposalsBeforeTheyCommit checks OnLeaderReceived: the
// leader hears a follower's proposal when it admits it, before the log
// gets to it, and only the leader does.
func TestLeaderHearsProposalsBeforeTheyCommit(t *testing.T) {
	var mu sync.Mutex
	heard := map[gpaxos.ID][]string{}
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	c.onLeaderReceived = func(at gpaxos.ID) func(gpaxos.ID, []byte) {
		return func(origin gpaxos.ID, body []byte) {
			mu.Lock()
			heard[at] = append(heard[at], fmt.Sprintf("%d:%s", origin, body))
			mu.Unlock()
		}
	}
	c.leader()
	for id := range c.all() { // again, with the hook
		c.stop(id)
		c.start(id, gpaxos.StarTopology{})
	}
	l := c.leader()
	var f *Replica
	for id, r := range c.all() {
		if id != l.cfg.ID {
			f = r
			break
		}
	}
	c.proposeRetry(f, "touch")
	mu.Lock()
	defer mu.Unlock()
	for at, bodies := range heard {
		if at != l.cfg.ID && len(bodies) > 0 {
			t.Errorf("server %d, not the leader, heard %v", at, bodies)
		}
	}
	if want := fmt.Sprintf("%d:touch", f.cfg.ID); !slices.Contains(heard[l.cfg.ID], want) {
		t.Fatalf("leader %d heard %v, want %s among them", l.cfg.ID, heard[l.cfg.ID], want)
	}
}

// TestIdleFollowerProposesAfterLeaderChange stops the leader while a
// follower has nothing in flight. The new leader's sequencer knows none
// of the follower's streams, so the follower's next proposal, proposed
// once, must still commit: it starts on a stream the new leader admits.
func TestIdleFollowerProposesAfterLeaderChange(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	l := c.leader()
	var f *Replica
	for id, r := range c.all() {
		if id != l.cfg.ID {
			f = r
			break
		}
	}
	for i := 0; i < 3; i++ {
		c.proposeRetry(f, fmt.Sprintf("before%d", i))
	}
	c.stop(l.cfg.ID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := f.Status()
		if st.HardState.Leader != l.cfg.ID && st.HardState.Current == st.HardState.Promised && st.HardState.Commit.Epoch() == st.HardState.Current {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := f.Propose([]byte("after"), nil); err != nil {
		t.Fatal(err)
	}
	c.waitDelivered([]gpaxos.ID{f.cfg.ID}, "after")
}

// TestLostStateRepairedAt restarts a follower whose hard state is gone:
// it starts recovering with no repair point, and once the ensemble
// registers its new incarnation the repair point covers every write
// committed before it lost its state.
func TestLostStateRepairedAt(t *testing.T) {
	c := newCluster(t, grid(1, 3), gpaxos.StarTopology{})
	l := c.leader()
	c.waitRegistered()
	f := c.follower(l).cfg.ID
	c.proposeRetry(l, "w")
	c.waitDelivered([]gpaxos.ID{1, 2, 3}, "w")
	c.mu.Lock()
	w := c.zxids[l.cfg.ID]["w"]
	c.mu.Unlock()
	c.stop(f)
	if err := os.Remove(filepath.Join(c.dirs[f], "hardstate")); err != nil {
		t.Fatal(err)
	}
	c.start(f, gpaxos.StarTopology{})
	if st := c.rep(f).Status(); !st.Recovering || st.RepairedAt != 0 {
		t.Fatalf("restarted without its state: recovering %v, repaired at %v", st.Recovering, st.RepairedAt)
	}
	c.waitRegistered()
	if st := c.rep(f).Status(); st.RepairedAt < w {
		t.Fatalf("repaired at %v, before the write at %v", st.RepairedAt, w)
	}
	for _, id := range []gpaxos.ID{1, 2, 3} {
		if id != f && c.rep(id).Status().RepairedAt != 0 {
			t.Fatalf("server %d kept its state but reports a repair point", id)
		}
	}
}

// TestSnapshotSavesDoNotCollide: a member saves the snapshots its
// application makes, from the application's goroutine, while it installs
// snapshots received from peers, from the persisting one. A save removes
// the temporary files interrupted saves left, so two at once in the one
// directory would take each other's file away and stop the replica.
func TestSnapshotSavesDoNotCollide(t *testing.T) {
	st, _, err := openStorage(t.TempDir(), false, quiet, grid(1, 3), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	data := make([]byte, 1<<20)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := uint32(1); i <= 40; i++ {
			if err := st.saveSnapshot(gpaxos.MakeZxid(1, i), grid(1, 3), data, 3); err != nil {
				errs <- fmt.Errorf("the application's snapshot: %w", err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for i := uint32(1); i <= 40; i++ {
			rd := gpaxos.Ready{Snapshot: &gpaxos.Snapshot{Index: gpaxos.MakeZxid(2, i), Voters: grid(1, 3), Data: data}}
			if err := st.persist(&rd); err != nil {
				errs <- fmt.Errorf("a received snapshot: %w", err)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
