package recipes

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/lockcheck"
	"github.com/giraffe-coord/giraffe/internal/netdelay"
)

// lkKind is one kind of lock under test.
type lkKind struct {
	name string
	// fifo: grants must follow queue positions (the lock node's czxid).
	fifo bool
	// newLock returns contender i's lock.
	newLock func(conn *client.Conn, path string, i int, opts ...LockOption) Locker
}

var lkKinds = []lkKind{
	{"tas", false, func(c *client.Conn, p string, _ int, o ...LockOption) Locker { return NewTASLock(c, p, o...) }},
	{"tas-async", false, func(c *client.Conn, p string, _ int, o ...LockOption) Locker { return NewAsyncTASLock(c, p, o...) }},
	{"queue", true, func(c *client.Conn, p string, _ int, o ...LockOption) Locker { return NewQueueLock(c, p, o...) }},
	{"queue-async", true, func(c *client.Conn, p string, _ int, o ...LockOption) Locker { return NewAsyncQueueLock(c, p, o...) }},
	{"reactive", true, func(c *client.Conn, p string, _ int, o ...LockOption) Locker { return NewReactiveLock(c, p, o...) }},
	{"rwlock", true, func(c *client.Conn, p string, i int, o ...LockOption) Locker {
		// Two readers for every writer.
		if i%3 != 0 {
			return NewReadLock(c, p, o...)
		}
		return NewWriteLock(c, p, o...)
	}},
}

// lkRun is one contention run: clients contenders, each acquiring rounds
// times with a short critical section, recording into a History.
type lkRun struct {
	addr    string
	kind    lkKind
	path    string
	clients int
	rounds  int
	opts    []LockOption
	// validate checks every sequencer while held and after release.
	validate bool
	// connOpts are options of the contenders' connections.
	connOpts []client.Option
}

func (r lkRun) run(t *testing.T, ctx context.Context, hist *lockcheck.History) {
	t.Helper()
	conns := make([]*client.Conn, r.clients)
	servers := strings.Split(r.addr, ",")
	for i := range conns {
		// Spread over the servers of a connect string, in turn.
		rot := i % len(servers)
		conns[i] = lkConnect(t, strings.Join(append(servers[rot:], servers[:rot]...), ","), r.connOpts...)
	}
	checker := conns[0]
	var wg sync.WaitGroup
	errs := make(chan error, r.clients)
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.contend(ctx, conn, checker, i, hist); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (r lkRun) contend(ctx context.Context, conn, checker *client.Conn, i int, hist *lockcheck.History) error {
	l := r.kind.newLock(conn, r.path, i, r.opts...)
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	name := fmt.Sprintf("%s-%d", r.kind.name, i)
	for range r.rounds {
		time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
		h := lockcheck.Hold{Client: name, Path: r.path, Position: lockcheck.NoPosition, Requested: time.Now()}
		if err := l.Lock(ctx); err != nil {
			hist.Add(h)
			return err
		}
		h.Acquired = time.Now()
		seq, err := l.Sequencer()
		if err != nil {
			return err
		}
		h.Shared = seq.Mode == Shared
		if r.kind.fifo {
			h.Position = seq.Generation
		}
		if r.validate {
			if err := ValidateSequencer(ctx, checker, seq); err != nil {
				return fmt.Errorf("sequencer %v while held: %w", seq, err)
			}
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
		h.Released = time.Now()
		hist.Add(h)
		if err := l.Unlock(ctx); err != nil {
			return err
		}
		if r.validate {
			if err := ValidateSequencer(ctx, checker, seq); !errors.Is(err, ErrInvalidSequencer) {
				return fmt.Errorf("sequencer %v after release: %v", seq, err)
			}
		}
		if _, err := l.Sequencer(); !errors.Is(err, ErrNotLocked) {
			return fmt.Errorf("sequencer after unlock: %v", err)
		}
	}
	return nil
}

func lkCheck(t *testing.T, hist *lockcheck.History, opts lockcheck.Options, wantHolds int) {
	t.Helper()
	holds := hist.Holds()
	if len(holds) != wantHolds {
		t.Errorf("%d holds recorded, want %d", len(holds), wantHolds)
	}
	for _, v := range lockcheck.Check(holds, opts) {
		t.Error(v)
	}
}

// TestLockContention: 50 clients contend for each kind of lock on the
// in-process Giraffe server; the checker verifies mutual exclusion,
// liveness and, for the queue locks, FIFO order, and every sequencer is
// valid exactly while its hold lasts.
func TestLockContention(t *testing.T) {
	addr := lkStartGiraffe(t)
	for _, k := range lkKinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var hist lockcheck.History
			r := lkRun{addr: addr, kind: k, path: "/locks/" + k.name, clients: 50, rounds: 3, validate: true}
			r.run(t, ctx, &hist)
			lkCheck(t, &hist, lockcheck.Options{FIFO: k.fifo}, r.clients*r.rounds)
		})
	}
}

// TestReactiveLockAsynchronous: behind a client round trip well over the
// poll interval, the reactive lock waits the asynchronous way with a
// polling window sized by that round trip (more than the fixed
// AsyncQueueLock's 16), and still excludes and grants in FIFO order.
func TestReactiveLockAsynchronous(t *testing.T) {
	addr := lkStartGiraffe(t)
	const rtt = 60 * time.Millisecond
	var (
		mu    sync.Mutex
		locks []*ReactiveLock
	)
	kind := lkKind{name: "reactive-async", fifo: true, newLock: func(c *client.Conn, p string, _ int, o ...LockOption) Locker {
		l := NewReactiveLock(c, p, o...)
		mu.Lock()
		locks = append(locks, l)
		mu.Unlock()
		return l
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var hist lockcheck.History
	r := lkRun{addr: addr, kind: kind, path: "/locks/reactive-async", clients: 8, rounds: 3,
		connOpts: []client.Option{client.WithDialer(netdelay.Dialer(rtt))}}
	r.run(t, ctx, &hist)
	lkCheck(t, &hist, lockcheck.Options{FIFO: true}, r.clients*r.rounds)
	for i, l := range locks {
		st := l.Stats()
		if !st.Async || st.Window <= defaultMaxInFlight || st.Window > maxPollWindow {
			t.Errorf("contender %d: async %v, window %d after %d acquisitions (RTT %v measured %v)", i, st.Async, st.Window, st.Acquisitions, rtt, st.RTT)
		}
	}
}

// TestLockMixedExclusive: the test-and-set kinds (synchronous and
// asynchronous) sharing the __tas__ node on one path, and the queue kinds
// (queue, asynchronous queue, reactive) on another, exclude each other.
func TestLockMixedExclusive(t *testing.T) {
	addr := lkStartGiraffe(t)
	groups := map[string][]lkKind{
		"tas-family":   {lkKinds[0], lkKinds[1]},
		"queue-family": {lkKinds[2], lkKinds[3], lkKinds[4]},
	}
	for name, kinds := range groups {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var hist lockcheck.History
			mixed := lkKind{name: name, fifo: name == "queue-family",
				newLock: func(c *client.Conn, p string, i int, o ...LockOption) Locker {
					return kinds[i%len(kinds)].newLock(c, p, i, o...)
				}}
			r := lkRun{addr: addr, kind: mixed, path: "/mixed/" + name, clients: 30, rounds: 3}
			r.run(t, ctx, &hist)
			lkCheck(t, &hist, lockcheck.Options{FIFO: mixed.fifo}, r.clients*r.rounds)
		})
	}
}
