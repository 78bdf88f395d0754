package recipes

import (
	"context"

	"github.com/giraffe-coord/giraffe/client"
)

// QueueLock is the synchronous queue lock of ZooKeeper's recipes and The
// Cost of Consensus: each contender creates an ephemeral sequential node
// under the lock path, lists the children, and holds the lock when no node
// it must wait for has a smaller sequence number; otherwise it sets an
// exists watch on its predecessor only (the greatest smaller one), so a
// release wakes exactly one waiter (no herd effect), and grants follow the
// queue (FIFO).
//
// The nodes are kazoo's, <path>/<uuid>__lock__<seq> (read locks:
// __rlock__), and the order is kazoo's (sequence suffixes compared as
// strings), so a kazoo Lock, WriteLock or ReadLock and a QueueLock on the
// same path are in one queue and exclude each other.
//
// Uncontended, an acquisition costs two round trips (create, then list).
type QueueLock struct {
	q *queueContender
}

var _ Locker = (*QueueLock)(nil)

// NewQueueLock returns an exclusive queue-lock contender for the lock at
// path. It waits for both earlier writers and earlier readers (kazoo's
// WriteLock rule), so it can share a path with read locks.
func NewQueueLock(conn *client.Conn, path string, opts ...LockOption) *QueueLock {
	return &QueueLock{q: newQueueContender(conn, path, lockNodeName, exclusiveBlockers, Exclusive, newLockConfig(opts))}
}

// Lock blocks until the lock is held or ctx ends.
func (l *QueueLock) Lock(ctx context.Context) error { return l.lock(ctx, false) }

// lock is Lock; with pipelined, the first listing is sent right behind
// the create instead of after its reply (one round trip uncontended
// instead of two; ReactiveLock's synchronous way).
func (l *QueueLock) lock(ctx context.Context, pipelined bool) error {
	q := l.q
	if err := q.prepare(ctx); err != nil {
		return err
	}
	var kids []string
	if pipelined {
		var err error
		if kids, err = q.createListed(ctx); err != nil {
			q.abandon()
			return err
		}
	} else if err := q.createSync(ctx); err != nil {
		q.abandon()
		return err
	}
	if err := l.waitTurn(ctx, kids); err != nil {
		q.abandon()
		return err
	}
	return q.acquired(ctx)
}

// waitTurn lists the queue and watches the predecessor until none is left;
// kids, if not nil, is a listing made after our node was created, used
// first.
func (l *QueueLock) waitTurn(ctx context.Context, kids []string) error {
	q := l.q
	for {
		if kids == nil {
			var err error
			kids, _, err = q.conn.Children(ctx, q.dir)
			if isConnLoss(err) {
				kids = nil
				if err := pause(ctx, retryBackoff); err != nil {
					return err
				}
				continue
			}
			if err != nil {
				return err
			}
		}
		pred, found := predecessor(kids, q.node, q.seq, q.blockers)
		kids = nil
		if !found {
			// Our node is gone: deleted by someone else (the session is
			// alive, or Children would have failed). Queue again, at the
			// back, as kazoo does.
			if err := q.createSync(ctx); err != nil {
				return err
			}
			continue
		}
		if pred == "" {
			return nil
		}
		st, w, err := q.conn.ExistsW(ctx, joinPath(q.dir, pred))
		if isConnLoss(err) || (err == nil && st == nil) {
			continue
		}
		if err != nil {
			return err
		}
		if err := waitEvent(ctx, w); err != nil {
			return err
		}
	}
}

// Unlock releases the lock.
func (l *QueueLock) Unlock(ctx context.Context) error { return l.q.unlock(ctx) }

// Sequencer describes the current hold.
func (l *QueueLock) Sequencer() (Sequencer, error) { return l.q.state.sequencer() }

// Mode is Exclusive for a queue or write lock, Shared for a read lock.
func (l *QueueLock) Mode() Mode { return l.q.mode }
