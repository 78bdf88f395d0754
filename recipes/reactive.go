package recipes

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// ReactiveLock is the reactive lock The Cost of Consensus proposes (after
// Lim and Agarwal's Reactive Synchronization Algorithms for
// Multiprocessors): before each acquisition it picks, from what it has
// measured, the protocol that its measurements say is faster.
//
// Both protocols are the queue lock's, on the same nodes: a sequential
// ephemeral node per contender (kazoo's <uuid>__lock__<seq>), the lowest
// holding the lock. They differ in how a contender waits:
//
//   - synchronous (QueueLock's way of waiting): create with a listing
//     pipelined behind it, then an exists watch on the predecessor; one
//     round trip uncontended (QueueLock itself lists only after the
//     create's reply, as the synchronous queue of The Cost of Consensus
//     does: two), and a release wakes exactly one waiter;
//   - asynchronous (AsyncQueueLock): the create and listings pipelined, a
//     listing every poll interval while waiting; one round trip
//     uncontended and a release noticed within a poll, at the price of the
//     listings. The reactive lock keeps as many listings on the wire as
//     the measured round trip holds intervals (pollWindow), so that it
//     notices a release within one interval whatever the round trip; the
//     fixed AsyncQueueLock keeps at most 16, so at a 250 ms round trip it
//     polls every 15.6 ms.
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
	// measured is closed once the first round trip has been measured
	// (by a probe sent when the lock was made).
	measured chan struct{}
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
	// Window is the number of listings the last asynchronous acquisition
	// kept on the wire (pollWindow of the round trip).
	Window int
}

// NewReactiveLock returns a reactive contender for the lock at path. It
// measures the round trip at once (one read), so that its first
// acquisition already chooses by it. WithPollInterval sets the
// asynchronous protocol's interval, which is also the rule's threshold.
func NewReactiveLock(conn *client.Conn, path string, opts ...LockOption) *ReactiveLock {
	cfg := newLockConfig(opts)
	l := &ReactiveLock{conn: conn, dir: path, poll: cfg.pollInterval, measured: make(chan struct{}),
		sync: NewQueueLock(conn, path, opts...), async: NewAsyncQueueLock(conn, path, opts...)}
	l.probe(l.measured)
	return l
}

// probe times a read of the lock's directory in the background: the
// connection answers it after one round trip to the server (reads are
// served locally, and it is sent before any request of the acquisition
// it accompanies). done, if not nil, is closed when it has answered.
func (l *ReactiveLock) probe(done chan struct{}) {
	call, sent := l.conn.ExistsAsync(l.dir), time.Now()
	go func() {
		if done != nil {
			defer close(done)
		}
		<-call.Done()
		if _, err := call.Result(); err != nil && !errors.Is(err, zkproto.ErrNoNode) {
			return
		}
		rtt := time.Since(sent)
		l.mu.Lock()
		l.stats.RTT = ewmaDur(l.stats.RTT, rtt)
		l.mu.Unlock()
	}()
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
	l.mu.Unlock()
	// The first acquisition waits for the first measurement (sent when
	// the lock was made, so usually in already).
	select {
	case <-l.measured:
	case <-ctx.Done():
		return ctx.Err()
	}
	l.mu.Lock()
	rtt := l.stats.RTT
	async := chooseAsync(l.stats.Async, rtt, l.poll)
	l.mu.Unlock()
	l.probe(nil) // a new sample for the next acquisition
	var lk Locker = l.sync
	var err error
	start := time.Now()
	window := pollWindow(rtt, l.poll)
	if async {
		lk = l.async
		l.async.q.cfg.maxInFlight = window
		err = l.async.Lock(ctx)
	} else {
		err = l.sync.lock(ctx, true)
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.cur = lk
	l.stats.record(async, time.Since(start))
	if async {
		l.stats.Window = window
	}
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
