package recipes

import (
	"context"
	"errors"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// AsyncQueueLock is the asynchronous queue lock of The Cost of Consensus:
// it sends the create of its sequential node and, without waiting for the
// reply, lists the children right behind it and again every poll interval;
// it holds the lock when the create has returned and a listing shows no
// node it must wait for ahead of its own. No watches are set.
//
// Uncontended it costs one round trip (create and list pipelined, The Cost
// of Consensus, Fig. 4) instead of QueueLock's two. It keeps FIFO order and
// the kazoo layout of QueueLock (the two, and kazoo's Lock, exclude each
// other on one path), at the price of a listing per interval while it
// waits, whose size grows with the queue.
type AsyncQueueLock struct {
	q *queueContender
}

var _ Locker = (*AsyncQueueLock)(nil)

// NewAsyncQueueLock returns an asynchronous queue-lock contender for the
// lock at path.
func NewAsyncQueueLock(conn *client.Conn, path string, opts ...LockOption) *AsyncQueueLock {
	return &AsyncQueueLock{q: newQueueContender(conn, path, lockNodeName, exclusiveBlockers, Exclusive, newLockConfig(opts))}
}

// poll is one listing on the wire; gen is the create it was sent after.
type poll struct {
	call *client.Call[client.ChildrenResult]
	gen  int
}

// Lock blocks until the lock is held or ctx ends.
func (l *AsyncQueueLock) Lock(ctx context.Context) error {
	q := l.q
	if err := q.prepare(ctx); err != nil {
		return err
	}
	gen := 1
	create := q.conn.CreateAsync(joinPath(q.dir, q.prefix), q.cfg.data, client.EphemeralSequential, q.cfg.acl)
	created := false
	polls := []poll{{q.conn.ChildrenAsync(q.dir), gen}}
	tick := time.NewTicker(q.cfg.pollInterval)
	defer tick.Stop()

	fail := func(err error) error {
		if !created {
			abandonCreate(q.conn, create)
		}
		q.abandon()
		return err
	}
	recreate := func() {
		gen++
		create = q.conn.CreateAsync(joinPath(q.dir, q.prefix), q.cfg.data, client.EphemeralSequential, q.cfg.acl)
		created = false
	}
	// onCreate handles the create's completion; it runs before any
	// listing sent after it is looked at (they complete after it).
	onCreate := func() error {
		res, err := create.Result()
		switch {
		case err == nil:
			q.setNode(res.Path, res.Stat.Czxid)
			created = true
		case isConnLoss(err):
			found, err := q.findNode(ctx)
			if err != nil {
				return err
			}
			if found {
				created = true
			} else {
				recreate()
			}
		case errors.Is(err, zkproto.ErrNoNode):
			if err := ensurePath(ctx, q.conn, q.dir, q.cfg.acl); err != nil {
				return err
			}
			recreate()
		default:
			return err
		}
		return nil
	}

	for {
		var createDone, head <-chan struct{}
		if !created {
			createDone = create.Done()
		}
		if len(polls) > 0 {
			head = polls[0].call.Done()
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-tick.C:
			if len(polls) < q.cfg.maxInFlight {
				polls = append(polls, poll{q.conn.ChildrenAsync(q.dir), gen})
			}
		case <-createDone:
			if err := onCreate(); err != nil {
				return fail(err)
			}
		case <-head:
			p := polls[0]
			polls = polls[1:]
			if !created {
				// The create was sent first, so it has completed too.
				if err := onCreate(); err != nil {
					return fail(err)
				}
			}
			res, err := p.call.Result()
			if isConnLoss(err) || !created || p.gen != gen {
				// A listing sent before the current create cannot show it.
				continue
			}
			if err != nil {
				return fail(err)
			}
			pred, found := predecessor(res.Children, q.node, q.seq, q.blockers)
			if !found {
				// Our node was deleted by someone else: queue again.
				q.node = ""
				recreate()
				continue
			}
			if pred == "" {
				return q.acquired(ctx)
			}
		}
	}
}

// Unlock releases the lock.
func (l *AsyncQueueLock) Unlock(ctx context.Context) error { return l.q.unlock(ctx) }

// Sequencer describes the current hold.
func (l *AsyncQueueLock) Sequencer() (Sequencer, error) { return l.q.state.sequencer() }
