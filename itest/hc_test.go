package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/hc/plan"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// The hierarchical lock service over real server processes: a classic-3
// master ensemble and standalone workers (docs/hierarchical-locks.md).

// hcService is a started service: its master ensemble, its workers
// (w1, w2, ...: connect strings, and the ensembles when the workers are
// ensembles), and an administrative session on the master.
type hcService struct {
	master    string
	workers   map[string]string
	ensembles map[string]*launcher.Cluster
	admin     *client.Conn
	// daemons are the daemon processes started, by name.
	daemons map[string]*exec.Cmd
}

// hcWorkerConfig makes sessions able to expire within a test.
const hcWorkerConfig = "tickTime=100\nminSessionTimeout=400\nmaxSessionTimeout=60000\nforceSync=no\n"

// startHC starts the master and standalone workers named in states (id
// → active or standby) and registers them.
func startHC(t *testing.T, states map[string]layout.ClusterState) *hcService {
	return startHCWith(t, states, false)
}

// startHCWith is startHC with classic-3 ensembles as workers when
// ensembles is set.
func startHCWith(t *testing.T, states map[string]layout.ClusterState, ensembles bool) *hcService {
	t.Helper()
	m := StartEnsemble(t, Classic3, "forceSync=no")
	s := &hcService{master: m.ConnectString(), workers: map[string]string{}, ensembles: map[string]*launcher.Cluster{},
		daemons: map[string]*exec.Cmd{}}
	ids := make([]string, 0, len(states))
	for id := range states {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if ensembles {
			c := StartEnsemble(t, Classic3, "forceSync=no")
			s.ensembles[id], s.workers[id] = c, c.ConnectString()
		} else {
			s.workers[id] = startHCWorker(t).Addr
		}
	}
	s.admin = hcConnect(t, s.master)
	ctx := hcCtx(t, 20*time.Second)
	if err := master.Init(ctx, s.admin); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := master.Register(ctx, s.admin, id, s.workers[id], states[id]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// startHCWorker starts a standalone server with short session timeouts.
func startHCWorker(t *testing.T) *Proc {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte(hcWorkerConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartServer(filepath.Join(dir, "data"), port, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- worker %s log (tail)\n%s", p.Addr, tail(p.Log.String(), 30))
		}
	})
	return p
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func hcCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func hcConnect(t *testing.T, servers string) *client.Conn {
	t.Helper()
	c, err := client.Connect(hcCtx(t, 20*time.Second), strings.Split(servers, ","), client.WithSessionTimeout(4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// client opens a lock client whose worker sessions time out after
// sessionTimeout and whose holds ask for lockDelay.
func (s *hcService) client(t *testing.T, sessionTimeout, lockDelay time.Duration, opts ...hc.Option) *hc.Client {
	t.Helper()
	opts = append([]hc.Option{hc.WithLockDelay(lockDelay),
		hc.WithWorkerOptions(client.WithSessionTimeout(sessionTimeout)),
		hc.WithMasterOptions(client.WithSessionTimeout(4 * time.Second))}, opts...)
	c, err := hc.NewClient(hcCtx(t, 20*time.Second), strings.Split(s.master, ","), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// daemon runs a daemon in this process until the test ends or stop is
// called; its result arrives on the returned channel.
func (s *hcService) daemon(t *testing.T, name string, threshold int, hook func(master.Point) error) (stop func(), done <-chan error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	finished := make(chan struct{})
	cfg := master.Config{Master: strings.Split(s.master, ","), Name: name, Threshold: threshold, Split: plan.ByDomain,
		SessionOptions: []client.Option{client.WithSessionTimeout(time.Second)}, Poll: 50 * time.Millisecond, AfterStep: hook}
	go func() {
		result <- master.Run(ctx, cfg)
		close(finished)
	}()
	stop = func() {
		cancel()
		<-finished
	}
	t.Cleanup(stop)
	return stop, result
}

// status reads the service's status.
func (s *hcService) status(t *testing.T) master.Status {
	t.Helper()
	st, err := master.ReadStatus(hcCtx(t, 10*time.Second), s.admin)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// settle waits until no move is in progress and the audit finds the
// master and the workers in agreement.
func (s *hcService) settle(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		problems, err := master.Audit(hcCtx(t, 20*time.Second), s.admin)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled after %v: %s", timeout, strings.Join(problems, "; "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// hcLocks creates domain d (unless it exists) and the locks l<from> ..
// l<from+n-1> in it, returning their paths.
func hcLocks(t *testing.T, c *hc.Client, d string, from, n int) []string {
	t.Helper()
	ctx := hcCtx(t, 30*time.Second)
	if err := c.CreateDomain(ctx, d); err != nil && !errors.Is(err, hc.ErrExists) {
		t.Fatal(err)
	}
	var out []string
	for i := from; i < from+n; i++ {
		l := fmt.Sprintf("%s/l%02d", d, i)
		if err := c.CreateLock(ctx, l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// hcWait polls cond until it holds, failing the test after timeout.
func hcWait(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func clusterLocks(st master.Status) map[string]int {
	out := map[string]int{}
	for _, c := range st.Clusters {
		out[c.ID] = c.Locks
	}
	return out
}

// TestHCPlacementAndRecruitment: new locks land on their domain's worker;
// past the threshold the daemon recruits the standby and moves a whole
// domain to it, after which the master and the workers agree, the
// domain's new locks land on the recruit, and every lock is acquired where
// the master says.
func TestHCPlacementAndRecruitment(t *testing.T) {
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Standby})
	c := s.client(t, 2*time.Second, 0)
	ctx := hcCtx(t, 60*time.Second)
	a := hcLocks(t, c, "/a", 0, 4)
	b := hcLocks(t, c, "/b", 0, 3)
	for _, l := range append(slices.Clone(a), b...) {
		if w, err := c.Locate(ctx, l); err != nil || w != "w1" {
			t.Fatalf("%s placed on %q (%v), want w1, the root domain's", l, w, err)
		}
	}
	if got := clusterLocks(s.status(t)); got["w1"] != 7 || got["w2"] != 0 {
		t.Fatalf("lock counts %v", got)
	}
	s.daemon(t, "d1", 6, nil)
	b = append(b, hcLocks(t, c, "/b", 3, 1)...) // the 8th lock crosses the threshold
	hcWait(t, 10*time.Second, "w2 recruited", func() bool { return clusterLocks(s.status(t))["w2"] > 0 })
	s.settle(t, 10*time.Second)
	st := s.status(t)
	if got := clusterLocks(st); got["w1"] != 4 || got["w2"] != 4 {
		t.Fatalf("after recruitment lock counts %v, want w1 4 (domain /a), w2 4 (domain /b)", got)
	}
	if st.Clusters[1].State != layout.Active {
		t.Fatalf("w2 not recruited: %+v", st.Clusters)
	}
	if err := c.CreateLock(ctx, "/b/new"); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateLock(ctx, "/a/new"); err != nil {
		t.Fatal(err)
	}
	for l, want := range map[string]string{"/b/new": "w2", "/a/new": "w1"} {
		if w, err := c.Locate(ctx, l); err != nil || w != want {
			t.Fatalf("%s placed on %q (%v), want %s (its domain's)", l, w, err, want)
		}
	}
	for _, l := range append(append(a, b...), "/a/new", "/b/new") {
		want := "w1"
		if strings.HasPrefix(l, "/b/") {
			want = "w2"
		}
		h, err := c.TryAcquire(ctx, l)
		if err != nil {
			t.Fatalf("acquire %s: %v", l, err)
		}
		if seq := h.Sequencer(); seq.Cluster != want || seq.Generation != 1 {
			t.Fatalf("%s: sequencer %v, want a first hold on %s", l, seq, want)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.CreateLock(ctx, "/a/l00"); !errors.Is(err, hc.ErrExists) {
		t.Fatalf("duplicate CreateLock: %v", err)
	}
	if err := c.CreateLock(ctx, "/nodomain/x"); !errors.Is(err, hc.ErrNoDomain) {
		t.Fatalf("CreateLock in a missing domain: %v", err)
	}
	if _, err := c.TryAcquire(ctx, "/a/missing"); !errors.Is(err, hc.ErrNoLock) {
		t.Fatalf("TryAcquire of a missing lock: %v", err)
	}
	s.settle(t, 5*time.Second)
}

// TestHCRecalcitrant: a held lock planned to move stays where it is,
// marked recalcitrant, while others are refused; its release lets it move
// within a second, after which it is acquired on the new worker with a
// larger generation and the old sequencer no longer validates. Repeated
// back and forth (100 times under HC_LONG, where the p99 is checked).
func TestHCRecalcitrant(t *testing.T) {
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Active})
	holder := s.client(t, 2*time.Second, 0)
	other := s.client(t, 2*time.Second, 0)
	ctx := hcCtx(t, 60*time.Second)
	lock := hcLocks(t, holder, "/r", 0, 1)[0]
	// The daemon reports when each move ends (its record deleted), so the
	// time from a release to the end of its move is measured without the
	// test's polling in it.
	moved := make(chan time.Time, 1)
	s.daemon(t, "d1", 0, func(p master.Point) error {
		if p.Phase == "" && p.Recorded {
			moved <- time.Now()
		}
		return nil
	})
	trials := 5
	if os.Getenv("HC_LONG") != "" {
		trials = 100
	}
	var delays []time.Duration
	for i := range trials {
		from, to := "w1", "w2"
		if i%2 == 1 {
			from, to = to, from
		}
		h, err := holder.TryAcquire(ctx, lock)
		if err != nil {
			t.Fatal(err)
		}
		seq := h.Sequencer()
		if seq.Cluster != from {
			t.Fatalf("trial %d: held on %s, want %s", i, seq.Cluster, from)
		}
		if planned, err := master.MoveLocks(ctx, s.admin, []string{lock}, to); err != nil || len(planned) != 1 {
			t.Fatalf("MoveLocks: %v %v", planned, err)
		}
		hcWait(t, 5*time.Second, "recalcitrant", func() bool { return s.status(t).Recalcitrant == 1 })
		time.Sleep(100 * time.Millisecond) // it must stay put
		if st := s.status(t); st.Recalcitrant != 1 || st.Moves[0].Phase != layout.Recalcitrant {
			t.Fatalf("trial %d: held lock moved on: %+v", i, st.Moves)
		}
		if _, err := other.TryAcquire(ctx, lock); !errors.Is(err, hc.ErrHeld) {
			t.Fatalf("trial %d: TryAcquire of a held recalcitrant lock: %v", i, err)
		}
		if ok, err := other.Validate(ctx, seq); err != nil || !ok {
			t.Fatalf("trial %d: the holder's sequencer does not validate: %v %v", i, ok, err)
		}
		if err := h.Release(ctx); err != nil {
			t.Fatal(err)
		}
		released := time.Now()
		select {
		case at := <-moved:
			delays = append(delays, at.Sub(released))
		case <-time.After(10 * time.Second):
			t.Fatalf("trial %d: the lock did not move after its release", i)
		}
		h2, err := other.TryAcquire(ctx, lock)
		if err != nil {
			t.Fatal(err)
		}
		seq2 := h2.Sequencer()
		if seq2.Cluster != to || seq2.Generation <= seq.Generation {
			t.Fatalf("trial %d: after the move held as %v, before as %v", i, seq2, seq)
		}
		if ok, _ := other.Validate(ctx, seq); ok {
			t.Fatalf("trial %d: sequencer %v still valid after its release and the move", i, seq)
		}
		if ok, _ := holder.Validate(ctx, seq2); !ok {
			t.Fatalf("trial %d: the new holder's sequencer %v does not validate", i, seq2)
		}
		if err := h2.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(delays)
	p99 := delays[(len(delays)*99+99)/100-1]
	if p99 > time.Second {
		t.Fatalf("recalcitrant locks moved after their release in %v (p99 of %d), want at most 1s", p99, trials)
	}
	t.Logf("recalcitrant lock moved after its release: median %v, p99 %v, max %v (%d trials)",
		delays[len(delays)/2], p99, delays[len(delays)-1], trials)
	s.settle(t, 5*time.Second)
}

// TestHCStaleLocation: a client whose cached location is stale (the lock
// moved since) is redirected; a client that acquires while the move is
// stopped between steps fails cleanly (TryAcquire: ErrMoving; Acquire:
// waits) and gets the lock at its new place once the move goes on.
func TestHCStaleLocation(t *testing.T) {
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Active})
	c := s.client(t, 2*time.Second, 0, hc.WithMoveWait(300*time.Millisecond))
	ctx := hcCtx(t, 60*time.Second)
	locks := hcLocks(t, c, "/s", 0, 2)
	for _, l := range locks {
		if w, err := c.Locate(ctx, l); err != nil || w != "w1" {
			t.Fatalf("%s on %q: %v", l, w, err)
		}
	}
	// A stale cache: the move happens while the client is not looking.
	stop, _ := s.daemon(t, "d1", 0, nil)
	if _, err := master.MoveLocks(ctx, s.admin, locks[:1], "w2"); err != nil {
		t.Fatal(err)
	}
	s.settle(t, 5*time.Second)
	stop()
	h, err := c.TryAcquire(ctx, locks[0])
	if err != nil {
		t.Fatal(err)
	}
	if h.Sequencer().Cluster != "w2" {
		t.Fatalf("acquired on %s, want w2", h.Sequencer().Cluster)
	}
	h.Release(ctx)

	// A move held between steps: the copy on w1 is disabled, the master
	// still says w1.
	gate := make(chan struct{})
	hook := func(p master.Point) error {
		if p.Phase == layout.Disabled && p.Recorded {
			<-gate
		}
		return nil
	}
	s.daemon(t, "d2", 0, hook)
	if _, err := master.MoveLocks(ctx, s.admin, locks[1:], "w2"); err != nil {
		t.Fatal(err)
	}
	hcWait(t, 5*time.Second, "move disabled", func() bool {
		st := s.status(t)
		return st.Moving == 1 && st.Moves[0].Phase == layout.Disabled
	})
	if _, err := c.TryAcquire(ctx, locks[1]); !errors.Is(err, hc.ErrMoving) {
		t.Fatalf("TryAcquire during a stopped move: %v, want ErrMoving", err)
	}
	got := make(chan *hc.Hold, 1)
	go func() {
		h, err := c.Acquire(ctx, locks[1])
		if err != nil {
			t.Error(err)
		}
		got <- h
	}()
	time.Sleep(200 * time.Millisecond)
	close(gate)
	h = <-got
	if h == nil || h.Sequencer().Cluster != "w2" || h.Sequencer().Generation != 1 {
		t.Fatalf("acquired during the move as %v, want the first hold on w2", h)
	}
	h.Release(ctx)
	s.settle(t, 5*time.Second)
}
