package itest

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/internal/lockcheck"
)

// hcChurnShape is the size of a churn run: make test runs the short one,
// `make test-hc-long` (HC_LONG=1) the long one.
type hcChurnShape struct {
	clients, domains, locksPerDomain, workers int
	duration, movePeriod                      time.Duration
	// killed holders are SIGKILLed while they hold; one more holder is
	// paused (SIGSTOP) past its session timeout.
	killed int
	// ensembles: the workers are classic-3 ensembles, and now and then a
	// worker's leader is killed with SIGKILL and restarted.
	ensembles bool
	// daemonProcs: the daemons are processes, and now and then the
	// elected one is killed with SIGKILL (another takes over).
	daemonProcs bool
}

func hcChurnConfig() hcChurnShape {
	if os.Getenv("HC_LONG") != "" {
		return hcChurnShape{clients: 30, domains: 3, locksPerDomain: 100, workers: 3, duration: 90 * time.Second,
			movePeriod: 2 * time.Second, killed: 6, ensembles: true, daemonProcs: true}
	}
	return hcChurnShape{clients: 6, domains: 2, locksPerDomain: 6, workers: 2, duration: 6 * time.Second,
		movePeriod: 250 * time.Millisecond, killed: 1}
}

// TestHCChurn: clients acquire and release locks in a loop while the
// locks move back and forth between workers, holder processes are killed
// with SIGKILL while they hold a lock and one is paused past its session
// timeout (and in the long run, the elected daemon and workers' leaders
// are killed). From the clients' own records: no two live holders of a
// lock ever overlap, generations strictly increase per lock, the lost
// holders' lock-delay is honored, and every request is granted; every
// holder writes to a service that fences with the sequencer's generation,
// which accepts every live holder's write and refuses the paused holder's
// once the lock has been granted again; at the end the master and the
// workers agree.
func TestHCChurn(t *testing.T) {
	shape := hcChurnConfig()
	const (
		sessionTimeout = 2 * time.Second
		victimSession  = time.Second
		victimDelay    = 1500 * time.Millisecond // longer than the session timeout, so the check has teeth
	)
	states := map[string]layout.ClusterState{}
	var workerIDs []string
	for i := 1; i <= shape.workers; i++ {
		id := fmt.Sprintf("w%d", i)
		states[id] = layout.Active
		workerIDs = append(workerIDs, id)
	}
	s := startHCWith(t, states, shape.ensembles)
	setup := s.client(t, sessionTimeout, 0)
	var locks []string
	for d := range shape.domains {
		locks = append(locks, hcLocks(t, setup, fmt.Sprintf("/c%d", d), 0, shape.locksPerDomain)...)
	}
	if shape.daemonProcs {
		s.daemonProc(t, "da")
		s.daemonProc(t, "db")
	} else {
		s.daemon(t, "d1", 0, nil)
	}
	var hist lockcheck.History
	store := newFencedStore()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var grants, delayed atomic.Int64
	var grantsOn sync.Map // worker → *atomic.Int64
	for _, id := range workerIDs {
		grantsOn.Store(id, new(atomic.Int64))
	}
	for i := range shape.clients {
		c := s.client(t, sessionTimeout, 300*time.Millisecond)
		name := fmt.Sprintf("c%d", i)
		r := rand.New(rand.NewPCG(uint64(i), 7))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				lock := locks[r.IntN(len(locks))]
				h := lockcheck.Hold{Client: name, Path: lock, Position: lockcheck.NoPosition, Requested: time.Now()}
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				hold, err := c.Acquire(ctx, lock)
				if err != nil {
					cancel()
					t.Errorf("%s: acquire %s: %v", name, lock, err)
					return
				}
				h.Acquired = time.Now()
				seq := hold.Sequencer()
				h.Generation = seq.Generation
				if !store.write(lock, seq.Generation) {
					t.Errorf("%s: the fenced write of its hold %v was refused: a later generation was accepted first", name, seq)
				}
				grants.Add(1)
				if hold.LockDelayWaited() > 0 {
					delayed.Add(1)
				}
				if n, ok := grantsOn.Load(seq.Cluster); ok {
					n.(*atomic.Int64).Add(1)
				}
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
				h.Released = time.Now()
				hist.Add(h)
				if err := hold.Release(ctx); err != nil {
					t.Errorf("%s: release %s (%v): %v", name, lock, seq, err)
				}
				cancel()
			}
		})
	}
	// Locks move back and forth.
	var moves atomic.Int64
	wg.Go(func() {
		r := rand.New(rand.NewPCG(99, 7))
		tick := time.NewTicker(shape.movePeriod)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			to := workerIDs[r.IntN(len(workerIDs))]
			var pick []string
			for _, l := range locks {
				if r.IntN(2) == 0 {
					pick = append(pick, l)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			planned, err := master.MoveLocks(ctx, s.admin, pick, to)
			cancel()
			if err != nil {
				t.Errorf("MoveLocks: %v", err)
				return
			}
			moves.Add(int64(len(planned)))
		}
	})
	if shape.daemonProcs || shape.ensembles {
		wg.Go(func() { s.nemesis(t, stop, shape) })
	}
	// Holders lost while they hold: killed ones, then a paused one.
	pause := shape.duration / time.Duration(shape.killed+2)
	for v := range shape.killed {
		time.Sleep(pause)
		lock := locks[(v*7)%len(locks)]
		h := lockcheck.Hold{Client: fmt.Sprintf("killed%d", v), Path: lock, Position: lockcheck.NoPosition, Requested: time.Now()}
		proc, at, seq := s.victim(t, lock, victimSession, victimDelay)
		h.Acquired, h.Generation = at, seq.Generation
		if !store.write(lock, seq.Generation) {
			t.Errorf("killed holder %d: the fenced write of its hold %v was refused", v, seq)
		}
		time.Sleep(300 * time.Millisecond)
		h.Released, h.Crashed = time.Now(), true
		proc.Process.Signal(syscall.SIGKILL)
		hist.Add(h)
	}
	time.Sleep(pause)
	pausedLock := locks[len(locks)-1]
	paused := s.pausedHolder(t, &hist, store, pausedLock, victimSession, victimDelay)
	time.Sleep(pause)
	close(stop)
	wg.Wait()
	// The lock is granted once more; the paused holder, resumed, writes
	// late with its old sequencer, and the service refuses it.
	again, err := setup.Acquire(hcCtx(t, 20*time.Second), pausedLock)
	if err != nil {
		t.Fatal(err)
	}
	if seq := again.Sequencer(); !store.write(pausedLock, seq.Generation) {
		t.Errorf("the fenced write of the hold %v taken after the paused one was refused", seq)
	}
	if store.write(pausedLock, paused.Generation) {
		t.Errorf("the paused holder's late write with %v was accepted after a later hold's", paused)
	}
	if err := again.Release(hcCtx(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	s.settle(t, 60*time.Second)
	violations := lockcheck.Check(hist.Holds(), lockcheck.Options{LockDelay: victimDelay, Generations: true})
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... %d more", len(violations)-i)
			break
		}
		t.Error(v)
	}
	spread := map[string]int64{}
	for _, id := range workerIDs {
		n, _ := grantsOn.Load(id)
		spread[id] = n.(*atomic.Int64).Load()
	}
	t.Logf("%d grants %v (%d after a lock-delay), %d moves planned, %d holders killed, 1 paused; %d fenced writes accepted",
		grants.Load(), spread, delayed.Load(), moves.Load(), shape.killed, store.acceptedWrites())
	if delayed.Load() == 0 {
		t.Fatal("no grant waited a lost holder's lock-delay: the lost holders' locks were never taken again")
	}
	for id, n := range spread {
		if n == 0 || moves.Load() == 0 {
			t.Fatalf("the locks did not move enough to test anything: %d moves, no grant on %s", moves.Load(), id)
		}
	}
}

// fencedStore is a downstream service that fences with sequencers: it
// accepts a write for a lock only with a generation larger than every
// one it accepted for that lock before.
type fencedStore struct {
	mu       sync.Mutex
	last     map[string]int64
	accepted int
}

func newFencedStore() *fencedStore { return &fencedStore{last: map[string]int64{}} }

// write reports whether the store accepts a write for lock fenced with
// generation gen.
func (f *fencedStore) write(lock string, gen int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen <= f.last[lock] {
		return false
	}
	f.last[lock] = gen
	f.accepted++
	return true
}

func (f *fencedStore) acceptedWrites() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.accepted
}

// pausedHolder runs a holder process on lock, which writes to store while
// it holds, and stops it (SIGSTOP) until its session has expired,
// recording its hold as lost at the pause; once resumed, its sequencer
// must be invalid and the process must notice the loss and exit. It
// returns the paused hold's sequencer.
func (s *hcService) pausedHolder(t *testing.T, hist *lockcheck.History, store *fencedStore, lock string, session, delay time.Duration) hc.Sequencer {
	t.Helper()
	h := lockcheck.Hold{Client: "paused", Path: lock, Position: lockcheck.NoPosition, Requested: time.Now()}
	proc, at, seq := s.victim(t, lock, session, delay)
	h.Acquired, h.Generation = at, seq.Generation
	if !store.write(lock, seq.Generation) {
		t.Errorf("the paused holder's fenced write of %v, while it held the lock, was refused", seq)
	}
	exited := make(chan error, 1)
	go func() { exited <- proc.Wait() }()
	proc.Process.Signal(syscall.SIGSTOP)
	h.Released, h.Crashed = time.Now(), true
	hist.Add(h)
	checker := s.client(t, 2*time.Second, 0)
	hcWait(t, 10*time.Second, "the paused holder's session expired", func() bool {
		ok, err := checker.Validate(hcCtx(t, 5*time.Second), seq)
		return err == nil && !ok
	})
	proc.Process.Signal(syscall.SIGCONT)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("the paused holder did not notice its lost lock")
	}
	return seq
}

// victim runs `giraffe hc acquire` on lock as a process holding it
// (running sleep) and returns once the hold is taken, with the time it was
// seen and its sequencer.
func (s *hcService) victim(t *testing.T, lock string, sessionTimeout, lockDelay time.Duration) (*exec.Cmd, time.Time, hc.Sequencer) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "hc", "acquire", "--master", s.master, "--session-timeout", sessionTimeout.String(),
		"--lock-delay", lockDelay.String(), lock, "--", "sleep", "60")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if text, ok := strings.CutPrefix(sc.Text(), "giraffe hc: acquired "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			seq, err := hc.ParseSequencer(text)
			if err != nil {
				t.Fatal(err)
			}
			return cmd, time.Now(), seq
		}
	}
	t.Fatalf("the victim never acquired %s", lock)
	return nil, time.Time{}, hc.Sequencer{}
}

// nemesis kills, until stop, the elected daemon (when the daemons are
// processes; a new one replaces it) and a worker's leader (when the
// workers are ensembles; it is restarted a second later).
func (s *hcService) nemesis(t *testing.T, stop <-chan struct{}, shape hcChurnShape) {
	r := rand.New(rand.NewPCG(5, 5))
	next := 0
	tick := time.NewTicker(7 * time.Second)
	defer tick.Stop()
	for round := 0; ; round++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if shape.daemonProcs && round%2 == 0 {
			name, err := master.Leader(hcCtx(t, 5*time.Second), s.admin)
			if p := s.daemons[name]; err == nil && p != nil {
				p.Process.Signal(syscall.SIGKILL)
				t.Logf("nemesis: killed daemon %s", name)
				next++
				s.daemonProc(t, fmt.Sprintf("dn%d", next))
			}
		}
		if shape.ensembles && round%2 == 1 {
			ids := make([]string, 0, len(s.ensembles))
			for id := range s.ensembles {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			id := ids[r.IntN(len(ids))]
			c := s.ensembles[id]
			leader, err := Leader(c, 5*time.Second)
			if err != nil {
				t.Errorf("worker %s: %v", id, err)
				continue
			}
			c.Kill(leader)
			t.Logf("nemesis: killed the leader of worker %s (server %d)", id, leader)
			time.Sleep(time.Second)
			if err := c.Restart(leader); err != nil {
				t.Errorf("restarting server %d of %s: %v", leader, id, err)
			}
		}
	}
}
