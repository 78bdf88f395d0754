package recipes

import (
	"context"
	"errors"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TASLock is the synchronous test-and-set lock of The Cost of Consensus:
// every contender creates the same ephemeral node, <path>/__tas__; the one
// whose create succeeds holds the lock, and Unlock deletes the node. A
// contender whose create fails with NODEEXISTS sets an exists watch on the
// node and tries again when it is deleted, rather than busy-looping
// creates.
//
// Uncontended, an acquisition is one round trip, the cheapest of all the
// locks. Under contention every release wakes every waiter, which all send
// a create (the herd effect), and the lock is not fair: whoever's create
// arrives first wins.
//
// TASLock and AsyncTASLock on the same path exclude each
// other (they share the node).
type TASLock struct {
	e *exclusiveNode
}

var _ Locker = (*TASLock)(nil)

// NewTASLock returns a test-and-set contender for the lock at path.
func NewTASLock(conn *client.Conn, path string, opts ...LockOption) *TASLock {
	return &TASLock{e: newExclusiveNode(conn, path, newLockConfig(opts))}
}

// Lock blocks until the lock is held or ctx ends.
func (l *TASLock) Lock(ctx context.Context) (err error) {
	e := l.e
	if err := e.prepare(ctx); err != nil {
		return err
	}
	lost := false // a create's answer was lost: the node may be ours
	defer func() {
		// Giving up with a create's answer lost, or with one on the
		// wire, may leave our node behind.
		if err != nil && (lost || ctx.Err() != nil) {
			e.abandon()
		}
	}()
	for {
		res, err := createWait(ctx, e.conn, e.node, e.data(), client.Ephemeral, e.cfg.acl)
		switch {
		case err == nil:
			return e.acquired(ctx, res.Stat.Czxid)
		case errors.Is(err, zkproto.ErrNodeExists):
			// After a lost answer the node may be ours (the create
			// succeeded, and the check after it failed too): waiting on it
			// would wait forever.
			if lost {
				if st, err := e.ownedStat(ctx); err == nil && st != nil {
					return e.acquired(ctx, st.Czxid)
				}
			}
			st, w, err := e.conn.ExistsW(ctx, e.node)
			if isConnLoss(err) {
				continue
			}
			if err != nil {
				return err
			}
			if st == nil {
				continue // released between our create and exists
			}
			if err := waitEvent(ctx, w); err != nil && !isConnLoss(err) {
				return err
			}
		case isConnLoss(err):
			lost = true
			st, err := e.ownedStat(ctx)
			if err != nil && !isConnLoss(err) {
				return err
			}
			if st != nil {
				return e.acquired(ctx, st.Czxid)
			}
		case errors.Is(err, zkproto.ErrNoNode):
			// The directory was deleted under us.
			if err := ensurePath(ctx, e.conn, e.dir, e.cfg.acl); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// Unlock releases the lock.
func (l *TASLock) Unlock(ctx context.Context) error { return l.e.unlock(ctx) }

// Sequencer describes the current hold.
func (l *TASLock) Sequencer() (Sequencer, error) { return l.e.state.sequencer() }
