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
// reactive synchronization): it takes a free lock by test-and-set (one
// round trip) and queues for a held one, and when the contention it has
// met lately is high it queues at once, without the test-and-set attempt.
//
// How the two protocols coexist. The mutex is always the test-and-set
// node <path>/__tas__ (shared with TASLock and AsyncTASLock): a holder is
// whoever created it. In test-and-set mode a contender creates it and, on
// NODEEXISTS, queues for this acquisition instead of joining the herd that
// waits on the node (the herd is what makes test-and-set slow under
// contention: seed 001's Figs. 13 and 14). In queue mode it first
// queues on an ephemeral sequential node <path>/<uuid>__rq__<seq>,
// watching only its predecessor, and only the head of that queue goes for
// the __tas__ node; once it holds it, it leaves the queue at once (an
// asynchronous delete) so that the next in line is already watching the
// __tas__ node when the lock is released. Since exclusion rests on one
// node whatever the mode, every contender picks its mode alone, with no
// agreement between contenders and no unsafe moment while they switch: a
// mix of modes is still mutually exclusive. Queue mode bounds the herd
// that a release wakes to one queue head plus the test-and-set contenders.
//
// The switching rule (reactive_rule.go) is derived from measurements; see
// docs/primitives.md.
type ReactiveLock struct {
	e *exclusiveNode

	mu    sync.Mutex
	stats ReactiveStats
}

var _ Locker = (*ReactiveLock)(nil)

// ReactiveStats is what a ReactiveLock has measured.
type ReactiveStats struct {
	// Queue reports whether the next acquisition queues.
	Queue bool
	// RTT is a moving average of the round trip of a create.
	RTT time.Duration
	// Contention is a moving average of the contenders met per
	// acquisition: the failed creates of test-and-set mode, or the larger
	// of those and the queue position in queue mode.
	Contention float64
	// AcquireTAS and AcquireQueue are moving averages of the time Lock
	// took in each mode (0 until the mode was used).
	AcquireTAS, AcquireQueue time.Duration
	// Acquisitions and Switches count the holds and the mode changes.
	Acquisitions, Switches int
}

// NewReactiveLock returns a reactive contender for the lock at path. It
// starts in test-and-set mode, the cheaper one without contention.
func NewReactiveLock(conn *client.Conn, path string, opts ...LockOption) *ReactiveLock {
	return &ReactiveLock{e: newExclusiveNode(conn, path, newLockConfig(opts))}
}

// Stats returns the lock's measurements.
func (l *ReactiveLock) Stats() ReactiveStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Lock blocks until the lock is held or ctx ends.
func (l *ReactiveLock) Lock(ctx context.Context) error {
	e := l.e
	if err := e.prepare(ctx); err != nil {
		return err
	}
	start := time.Now()
	queue := l.Stats().Queue
	var m sample
	var err error
	if queue {
		err = l.lockQueue(ctx, &m)
	} else {
		// Test-and-set while the lock is free; found held, queue for
		// this acquisition rather than join the herd on the node.
		var busy bool
		if busy, err = l.lockTAS(ctx, &m, true); err == nil && busy {
			queue = true
			err = l.lockQueue(ctx, &m)
		}
	}
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.stats.record(queue, time.Since(start), m)
	l.mu.Unlock()
	return nil
}

// sample is what one acquisition measured.
type sample struct {
	rtt       time.Duration // first create's round trip (0: none)
	contended int           // contenders met
}

// createTAS sends one create of the __tas__ node and times it.
func (l *ReactiveLock) createTAS(ctx context.Context, m *sample) (client.CreateResult, error) {
	t := time.Now()
	res, err := createWait(ctx, l.e.conn, l.e.node, l.e.data(), client.Ephemeral, l.e.cfg.acl)
	if m.rtt == 0 && (err == nil || errors.Is(err, zkproto.ErrNodeExists)) {
		m.rtt = time.Since(t)
	}
	return res, err
}

// lockTAS is TASLock's loop, counting the failed creates. With
// giveUpIfHeld it returns busy at the first create that finds the lock
// held instead of waiting.
func (l *ReactiveLock) lockTAS(ctx context.Context, m *sample, giveUpIfHeld bool) (busy bool, err error) {
	e := l.e
	for {
		res, err := l.createTAS(ctx, m)
		switch {
		case err == nil:
			return false, e.acquired(ctx, res.Stat.Czxid)
		case errors.Is(err, zkproto.ErrNodeExists):
			m.contended++
			if giveUpIfHeld {
				return true, nil
			}
			st, w, err := e.conn.ExistsW(ctx, e.node)
			if isConnLoss(err) || (err == nil && st == nil) {
				continue
			}
			if err != nil {
				return false, err
			}
			if err := waitEvent(ctx, w); err != nil {
				return false, err
			}
		case isConnLoss(err):
			st, err := e.ownedStat(ctx)
			if err != nil && !isConnLoss(err) {
				return false, err
			}
			if st != nil {
				return false, e.acquired(ctx, st.Czxid)
			}
		case errors.Is(err, zkproto.ErrNoNode):
			if err := ensurePath(ctx, e.conn, e.dir, e.cfg.acl); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
}

// lockQueue waits at the head of the __rq__ queue, then takes the
// __tas__ node.
func (l *ReactiveLock) lockQueue(ctx context.Context, m *sample) error {
	e := l.e
	q := newQueueContender(e.conn, e.dir, rqueueNodeName, reactiveBlockers, Exclusive, e.cfg)
	q.prefix = newContenderPrefix() + rqueueNodeName
	if err := q.createSync(ctx); err != nil {
		return err
	}
	first := true
	for {
		kids, _, err := e.conn.Children(ctx, e.dir)
		if isConnLoss(err) {
			if err := pause(ctx, retryBackoff); err != nil {
				q.abandon()
				return err
			}
			continue
		}
		if err != nil {
			q.abandon()
			return err
		}
		if first {
			m.contended = queuePosition(kids, q.seq, q.blockers)
			first = false
		}
		pred, found := predecessor(kids, q.node, q.seq, q.blockers)
		if !found {
			if err := q.createSync(ctx); err != nil {
				return err
			}
			continue
		}
		if pred == "" {
			break
		}
		st, w, err := e.conn.ExistsW(ctx, joinPath(e.dir, pred))
		if isConnLoss(err) || (err == nil && st == nil) {
			continue
		}
		if err == nil {
			err = waitEvent(ctx, w)
		}
		if err != nil {
			q.abandon()
			return err
		}
	}
	// Head of the queue: only test-and-set contenders compete now.
	position := m.contended
	m.contended = 0
	_, err := l.lockTAS(ctx, m, false)
	m.contended = max(m.contended, position)
	// Leave the queue whatever happened: on success the next in line
	// starts watching the __tas__ node while we hold it.
	q.abandon()
	return err
}

// Unlock releases the lock.
func (l *ReactiveLock) Unlock(ctx context.Context) error { return l.e.unlock(ctx) }

// Sequencer describes the current hold.
func (l *ReactiveLock) Sequencer() (Sequencer, error) { return l.e.state.sequencer() }
