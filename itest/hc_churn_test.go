package itest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
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
	clients, domains, locksPerDomain int
	duration, movePeriod             time.Duration
	victims                          int
}

func hcChurnConfig() hcChurnShape {
	if os.Getenv("HC_LONG") != "" {
		return hcChurnShape{clients: 30, domains: 3, locksPerDomain: 100, duration: 90 * time.Second,
			movePeriod: 2 * time.Second, victims: 6}
	}
	return hcChurnShape{clients: 6, domains: 2, locksPerDomain: 6, duration: 6 * time.Second,
		movePeriod: 250 * time.Millisecond, victims: 1}
}

// TestHCChurn: clients acquire and release locks in a loop while the
// locks move back and forth between two workers and holder processes are
// killed with SIGKILL while they hold a lock. From the clients' own
// records: no two live holders of a lock ever overlap, generations
// strictly increase per lock, a killed holder's lock-delay is honored,
// and every request is granted; at the end the master and the workers
// agree.
func TestHCChurn(t *testing.T) {
	shape := hcChurnConfig()
	const (
		sessionTimeout = 2 * time.Second
		victimSession  = time.Second
		victimDelay    = 1500 * time.Millisecond // longer than the session timeout, so the check has teeth
	)
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Active})
	setup := s.client(t, sessionTimeout, 0)
	var locks []string
	for d := range shape.domains {
		locks = append(locks, hcLocks(t, setup, fmt.Sprintf("/c%d", d), 0, shape.locksPerDomain)...)
	}
	s.daemon(t, "d1", 0, nil)
	var hist lockcheck.History
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var grants, onW2 atomic.Int64
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
				h.Generation = hold.Sequencer().Generation
				grants.Add(1)
				if hold.Sequencer().Cluster == "w2" {
					onW2.Add(1)
				}
				time.Sleep(time.Duration(r.IntN(3)) * time.Millisecond)
				h.Released = time.Now()
				hist.Add(h)
				if err := hold.Release(ctx); err != nil {
					t.Errorf("%s: release %s: %v", name, lock, err)
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
			to := []string{"w1", "w2"}[r.IntN(2)]
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
	// Holders killed while they hold.
	for v := range shape.victims {
		time.Sleep(shape.duration / time.Duration(shape.victims+1))
		lock := locks[v%len(locks)]
		h := lockcheck.Hold{Client: fmt.Sprintf("victim%d", v), Path: lock, Position: lockcheck.NoPosition, Requested: time.Now()}
		proc, at, seq := s.victim(t, lock, victimSession, victimDelay)
		h.Acquired = at
		parsed, err := hc.ParseSequencer(seq)
		if err != nil {
			t.Fatal(err)
		}
		h.Generation = parsed.Generation
		time.Sleep(300 * time.Millisecond)
		h.Released = time.Now()
		h.Crashed = true
		proc.Process.Signal(syscall.SIGKILL)
		hist.Add(h)
	}
	time.Sleep(shape.duration / time.Duration(shape.victims+1))
	close(stop)
	wg.Wait()
	s.settle(t, 30*time.Second)
	holds := hist.Holds()
	violations := lockcheck.Check(holds, lockcheck.Options{LockDelay: victimDelay, Generations: true})
	for i, v := range violations {
		if i == 20 {
			t.Errorf("... %d more", len(violations)-i)
			break
		}
		t.Error(v)
	}
	t.Logf("%d grants (%d on w2), %d moves planned, %d holders killed", grants.Load(), onW2.Load(), moves.Load(), shape.victims)
	if moves.Load() == 0 || onW2.Load() == 0 || onW2.Load() == grants.Load() {
		t.Fatalf("the locks did not move enough to test anything: %d moves, %d of %d grants on w2", moves.Load(), onW2.Load(), grants.Load())
	}
}
