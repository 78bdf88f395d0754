package recipes

import (
	"context"
	"errors"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// AsyncTASLock is the asynchronous test-and-set lock of The Cost of
// Consensus: it sends a create of <path>/__tas__ every poll interval
// (WithPollInterval) without waiting for the previous one's reply, and
// holds the lock when one of them succeeds. It sets no watches: a release
// is noticed by the next create that arrives after it, which is at most an
// interval plus half a round trip later, instead of the
// notification-plus-create round trip and a half of TASLock. It puts more
// load on the server, and like TASLock it is not fair.
//
// Attempts complete in the order they were sent (the Conn's FIFO order),
// so the first success is the only one: the later attempts, already on the
// wire, find the node ours and fail; an Unlock sent afterwards is ordered
// after all of them.
type AsyncTASLock struct {
	e *exclusiveNode
}

var _ Locker = (*AsyncTASLock)(nil)

// NewAsyncTASLock returns an asynchronous test-and-set contender for the
// lock at path.
func NewAsyncTASLock(conn *client.Conn, path string, opts ...LockOption) *AsyncTASLock {
	return &AsyncTASLock{e: newExclusiveNode(conn, path, newLockConfig(opts))}
}

// Lock blocks until the lock is held or ctx ends.
func (l *AsyncTASLock) Lock(ctx context.Context) (err error) {
	e := l.e
	if err := e.prepare(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(e.cfg.pollInterval)
	defer tick.Stop()
	var inFlight []*client.Call[client.CreateResult]
	lost := false // an attempt's answer was lost: the node may be ours
	defer func() {
		// Giving up with a create's answer lost, or with one on the
		// wire, may leave our node behind.
		if err != nil && (lost || ctx.Err() != nil) {
			e.abandon()
		}
	}()
	send := func() {
		if len(inFlight) < e.cfg.maxInFlight {
			inFlight = append(inFlight, e.conn.CreateAsync(e.node, e.data(), client.Ephemeral, e.cfg.acl))
		}
	}
	// giveUp abandons the attempts on the wire: any of them may still
	// succeed (only the first to complete can), so each is watched and its
	// node removed.
	giveUp := func() {
		for _, cl := range inFlight {
			abandonCreate(e.conn, cl)
		}
	}
	send()
	for {
		var head <-chan struct{}
		if len(inFlight) > 0 {
			head = inFlight[0].Done()
		}
		select {
		case <-ctx.Done():
			giveUp()
			return ctx.Err()
		case <-tick.C:
			send()
		case <-head:
			res, err := inFlight[0].Result()
			inFlight = inFlight[1:]
			switch {
			case err == nil:
				return e.acquired(ctx, res.Stat.Czxid)
			case errors.Is(err, zkproto.ErrNodeExists):
				// After a lost answer whose check failed too, the node
				// may be ours; polling would never see it free.
				if lost {
					if st, err := e.ownedStat(ctx); err == nil && st != nil {
						return e.acquired(ctx, st.Czxid)
					}
				}
			case isConnLoss(err):
				lost = true
				// Every attempt on the lost connection fails the same
				// way; one check tells whether any of them happened.
				for _, cl := range inFlight {
					<-cl.Done()
				}
				inFlight = inFlight[:0]
				st, err := e.ownedStat(ctx)
				if err != nil && !isConnLoss(err) {
					return err
				}
				if st != nil {
					return e.acquired(ctx, st.Czxid)
				}
			case errors.Is(err, zkproto.ErrNoNode):
				if err := ensurePath(ctx, e.conn, e.dir, e.cfg.acl); err != nil {
					giveUp()
					return err
				}
			default:
				giveUp()
				return err
			}
		}
	}
}

// Unlock releases the lock.
func (l *AsyncTASLock) Unlock(ctx context.Context) error { return l.e.unlock(ctx) }

// Sequencer describes the current hold.
func (l *AsyncTASLock) Sequencer() (Sequencer, error) { return l.e.state.sequencer() }
