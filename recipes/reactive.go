package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// ReactiveLock is seed 001's reactive lock (after Lim and Agarwal's
// reactive synchronization): before each acquisition it picks, from what
// it has measured, the protocol that its measurements say is faster.
//
// Both protocols are the queue lock's, on the same nodes: a sequential
// ephemeral node per contender (kazoo's <uuid>__lock__<seq>), the lowest
// holding the lock. They differ in how a contender waits:
//
//   - synchronous (QueueLock): create, then list, then an exists watch on
//     the predecessor; two round trips uncontended, and a release wakes
//     exactly one waiter;
//   - asynchronous (AsyncQueueLock): the create and listings pipelined, a
//     listing every poll interval while waiting; one round trip
//     uncontended and a release noticed within a poll, at the price of the
//     listings.
//
// Since both are one queue, contenders may choose differently at the same
// moment: mutual exclusion and FIFO order hold whatever the mix (and a
// kazoo Lock on the same path is in the same queue). The measurements
// behind the rule (reactive_rule.go) are in docs/primitives.md: the
// asynchronous protocol wins once the client's round trip is more than a
// poll interval, the synchronous one below that (where polling only adds
// work), whatever the contention and the servers' round trips.
type ReactiveLock struct {
	conn  *client.Conn
	dir   string
	sync  *QueueLock
	async *AsyncQueueLock

	mu    sync.Mutex
	cur   Locker // the protocol of the current hold
	stats ReactiveStats
	poll  time.Duration
}

var _ Locker = (*ReactiveLock)(nil)

// ReactiveStats is what a ReactiveLock has measured.
type ReactiveStats struct {
	// Async reports whether the last acquisition used the asynchronous
	// protocol.
	Async bool
	// RTT is a moving average of the client's round trip to its server
	// (a read, timed alongside each acquisition).
	RTT time.Duration
	// AcquireSync and AcquireAsync are moving averages of the time Lock
	// took with each protocol (0 until used).
	AcquireSync, AcquireAsync time.Duration
	// Acquisitions and Switches count the holds and the changes of
	// protocol.
	Acquisitions, Switches int
}

// NewReactiveLock returns a reactive contender for the lock at path. It
// starts with the synchronous protocol and switches once it has measured
// the round trip. WithPollInterval sets the asynchronous protocol's
// interval, which is also the rule's threshold.
func NewReactiveLock(conn *client.Conn, path string, opts ...LockOption) *ReactiveLock {
	cfg := newLockConfig(opts)
	return &ReactiveLock{conn: conn, dir: path, poll: cfg.pollInterval,
		sync: NewQueueLock(conn, path, opts...), async: NewAsyncQueueLock(conn, path, opts...)}
}

// Stats returns the lock's measurements.
func (l *ReactiveLock) Stats() ReactiveStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Lock blocks until the lock is held or ctx ends.
func (l *ReactiveLock) Lock(ctx context.Context) error {
	l.mu.Lock()
	if l.cur != nil {
		l.mu.Unlock()
		return ErrAlreadyLocked
	}
	async := chooseAsync(l.stats.Async, l.stats.RTT, l.poll)
	l.mu.Unlock()
	// Time a read sent ahead of the lock's own requests: the connection
	// answers it before them, after one round trip to the server (reads
	// are served locally, and nothing of ours is in flight before it).
	probe, sent := l.conn.ExistsAsync(l.dir), time.Now()
	go func() {
		<-probe.Done()
		if _, err := probe.Result(); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
			return
		}
		rtt := time.Since(sent)
		l.mu.Lock()
		l.stats.RTT = ewmaDur(l.stats.RTT, rtt)
		l.mu.Unlock()
	}()
	var lk Locker = l.sync
	if async {
		lk = l.async
	}
	start := time.Now()
	if err := lk.Lock(ctx); err != nil {
		return err
	}
	l.mu.Lock()
	l.cur = lk
	l.stats.record(async, time.Since(start))
	l.mu.Unlock()
	return nil
}

// Unlock releases the lock.
func (l *ReactiveLock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	cur := l.cur
	l.mu.Unlock()
	if cur == nil {
		return ErrNotLocked
	}
	err := cur.Unlock(ctx)
	if _, serr := cur.Sequencer(); errors.Is(serr, ErrNotLocked) {
		l.mu.Lock()
		l.cur = nil
		l.mu.Unlock()
	}
	return err
}

// Sequencer describes the current hold.
func (l *ReactiveLock) Sequencer() (Sequencer, error) {
	l.mu.Lock()
	cur := l.cur
	l.mu.Unlock()
	if cur == nil {
		return Sequencer{}, ErrNotLocked
	}
	return cur.Sequencer()
}
