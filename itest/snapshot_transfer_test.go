package itest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestFollowerThatLostItsDiskCatchesUpFromASnapshot: in classic-3 under
// writes, a follower is killed and comes back with an empty data
// directory. The leader has compacted its log into a snapshot of several
// mebibytes, which goes to the follower in chunk frames while the writes
// go on; the follower must end with every znode, serve reads and writes,
// and count again.
func TestFollowerThatLostItsDiskCatchesUpFromASnapshot(t *testing.T) {
	c, l := startRegistered(t, Classic3, "snapCount=100")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := client.Connect(ctx, []string{serverAddr(t, c, l)}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// 6 MiB of znodes: the snapshot needs six chunks or more.
	const nodes, size = 192, 32 << 10
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, size) }
	for i := range nodes {
		if _, _, err := cl.Create(ctx, fmt.Sprintf("/n%03d", i), value(i), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatal(err)
		}
	}
	f := follower(c, l)
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	// More writes than snapCount, so that the leader's log no longer
	// reaches back to the start and the follower gets the snapshot.
	for i := range 300 {
		if _, err := cl.Set(ctx, fmt.Sprintf("/n%03d", i%nodes), value(i%nodes), -1); err != nil {
			t.Fatal(err)
		}
	}
	replaceDisk(t, f)
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	// Writes go on while the follower catches up.
	writes := make(chan error, 1)
	go func() {
		var err error
		for i := 0; i < 200 && err == nil; i++ {
			_, err = cl.Set(ctx, "/n000", value(0), -1)
		}
		writes <- err
	}()
	waitRegistered(t, c, time.Minute)
	if err := <-writes; err != nil {
		t.Fatalf("writes while the follower caught up: %v", err)
	}
	rd := syncedClient(ctx, t, f.ClientAddr)
	for i := range nodes {
		data, _, err := rd.Get(ctx, fmt.Sprintf("/n%03d", i))
		if err != nil || !bytes.Equal(data, value(i)) {
			t.Fatalf("/n%03d on the follower: %d bytes, %v", i, len(data), err)
		}
	}
	log, err := os.ReadFile(f.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "installed snapshot") {
		t.Fatal("the follower caught up without a snapshot: the test no longer tests the transfer")
	}
	createAcknowledged(ctx, t, f.ClientAddr, "/after")
	checkEveryServerServes(ctx, t, c, "/after", "follower's catch-up")
}

// replaceDisk gives server f, which is down, a new disk: its data
// directory empty but for myid, which the operator puts back (as with
// ZooKeeper).
func replaceDisk(t *testing.T, f launcher.Server) {
	t.Helper()
	data := filepath.Join(f.Dir, "data")
	myid, err := os.ReadFile(filepath.Join(data, "myid"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), myid, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFollowerCatchesUpFromASnapshotUnderSteadyWrites: in classic-3, a
// follower that lost its disk needs a snapshot, and each one it receives
// from the leader is held for 2 s (the transport's slowsnap fault), as a
// large tree's takes to arrive, while four steady writers make the leader
// write snapCount entries many times over meanwhile. The leader must keep
// the log behind the snapshot it sent: otherwise the follower, once it
// has installed it, lacks entries the leader no longer holds and needs
// the next snapshot, for as long as the writes go on. The follower must
// serve the writes made after its restart while the writers still write.
func TestFollowerCatchesUpFromASnapshotUnderSteadyWrites(t *testing.T) {
	c, l := startRegistered(t, Classic3, "snapCount=100")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := serverAddr(t, c, l)
	cl, err := client.Connect(ctx, []string{addr}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const writers = 4
	for w := range writers {
		if _, _, err := cl.Create(ctx, fmt.Sprintf("/w%d", w), []byte("0"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatal(err)
		}
	}
	f := follower(c, l)
	if err := c.Kill(f.ID); err != nil {
		t.Fatal(err)
	}
	replaceDisk(t, f)

	// Each writer sets its znode to 1, 2, 3, ... until told to stop, or
	// for two minutes at most.
	var written [writers]atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
			defer wcancel()
			for i := int64(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := cl.Set(wctx, fmt.Sprintf("/w%d", w), []byte(strconv.FormatInt(i, 10)), -1); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				written[w].Store(i)
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for written[0].Load() < 300 {
		time.Sleep(10 * time.Millisecond)
	}
	// The leader sends the follower nothing until the follower holds
	// snapshots: a fault rule does not outlive a restart.
	if _, err := c.Fault(l, fmt.Sprintf("block %d", f.ID)); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(f.ID); err != nil {
		t.Fatal(err)
	}
	slowSnapshots(t, c, f.ID, l, 2*time.Second)
	if _, err := c.Fault(l, "heal"); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	// The follower has caught up once it serves, from its own tree, a
	// value of /w0 written after it came back and after more than
	// snapCount further writes.
	mark := written[0].Load() + 200
	deadline := time.Now().Add(60 * time.Second)
	var got int64
	for got < mark {
		select {
		case err := <-errs:
			t.Fatalf("writes while the follower caught up: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower serves /w0 = %d after 60 s; the writers are at %d: it never caught up while they wrote", got, written[0].Load())
		}
		got = followerValue(ctx, f.ClientAddr, "/w0")
		time.Sleep(100 * time.Millisecond)
	}
	if time.Since(restarted) < 2*time.Second {
		t.Fatalf("the follower caught up %v after its restart, before the snapshot's hold: the test no longer tests a slow snapshot", time.Since(restarted))
	}
	if written[0].Load() <= mark {
		t.Fatal("the writers stopped before the follower caught up: the test no longer tests catching up under writes")
	}
	log, err := os.ReadFile(f.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "installed snapshot") {
		t.Fatal("the follower caught up without a snapshot: the test no longer tests the transfer")
	}
	close(stop)
	wg.Wait()
	stop = make(chan struct{})
	if _, err := c.Fault(f.ID, "heal"); err != nil {
		t.Fatal(err)
	}
	rd := syncedClient(ctx, t, f.ClientAddr)
	for w := range writers {
		data, _, err := rd.Get(ctx, fmt.Sprintf("/w%d", w))
		if want := strconv.FormatInt(written[w].Load(), 10); err != nil || string(data) != want {
			t.Fatalf("/w%d on the follower = %q, %v; want %s", w, data, err, want)
		}
	}
	createAcknowledged(ctx, t, f.ClientAddr, "/after")
	checkEveryServerServes(ctx, t, c, "/after", "follower's catch-up")
}

// followerValue reads path from the server at addr without a sync (from
// its own tree) as a number; 0 when the server does not serve yet.
func followerValue(ctx context.Context, addr, path string) int64 {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, []string{addr}, client.WithSessionTimeout(10*time.Second))
	if err != nil {
		return 0
	}
	defer cl.Close()
	data, _, err := cl.Get(ctx, path)
	if err != nil {
		return 0
	}
	v, _ := strconv.ParseInt(string(data), 10, 64)
	return v
}

// slowSnapshots makes server id hold every snapshot it receives from
// peer for d, as soon as its admin endpoint answers after a restart.
func slowSnapshots(t *testing.T, c *launcher.Cluster, id, peer members.ID, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Fault(id, fmt.Sprintf("slowsnap %d %v", peer, d))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d: %v", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLaggingFollowerDoesNotLeadWithASlowSnapshot: in classic-3, the
// follower next in line after the leader is cut off while writes make the
// leader compact past it, comes back holding every snapshot it receives
// for 3 s (slowsnap), and the leader is killed at once. The lagging
// follower is the first to find the leader silent; had it won its group
// it would have run for leader and fetched the best history, a snapshot,
// which outlasts a candidacy, again at each new epoch. The other survivor,
// which holds that history, must lead instead, and writes through it must
// succeed once the lagging follower has its snapshot.
func TestLaggingFollowerDoesNotLeadWithASlowSnapshot(t *testing.T) {
	c, l := startRegistered(t, Classic3, "snapCount=100")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lagging := follower(c, l).ID // the member after the leader in the group's order
	var other launcher.Server
	for _, s := range c.Servers {
		if s.ID != l && s.ID != lagging {
			other = s
		}
	}
	cl, err := client.Connect(ctx, []string{other.ClientAddr}, client.WithSessionTimeout(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, _, err := cl.Create(ctx, "/w", []byte("0"), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Fault(lagging, "isolate"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 300; i++ {
		if _, err := cl.Set(ctx, "/w", []byte(strconv.Itoa(i)), -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Fault(lagging, "heal; slowsnap * 3s"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(l); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		wctx, wcancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := cl.Set(wctx, "/w", []byte("after"), -1)
		wcancel()
		if err == nil {
			break
		}
		if time.Since(killed) > 20*time.Second {
			t.Fatalf("no write succeeded 20 s after the leader was killed (last: %v); status: %+v", err, c.Status())
		}
	}
	t.Logf("writes resumed %v after the kill", time.Since(killed).Round(time.Millisecond))
	if got, err := Leader(c, 10*time.Second); err != nil || got != other.ID {
		t.Fatalf("leader %d (%v), want %d, which held the newest history", got, err, other.ID)
	}
	if _, err := c.Fault(lagging, "heal"); err != nil {
		t.Fatal(err)
	}
}

// syncedClient connects to the server at addr and syncs, so that its reads
// show everything committed before; the test closes it at its end.
func syncedClient(ctx context.Context, t *testing.T, addr string) *client.Conn {
	t.Helper()
	rd, err := client.Connect(ctx, []string{addr}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rd.Close() })
	if _, err := rd.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	return rd
}
