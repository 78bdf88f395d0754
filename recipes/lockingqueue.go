package recipes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// LockingQueue is kazoo's LockingQueue: a priority queue whose items are
// taken reliably. Get locks the first free item instead of deleting it;
// the consumer then Consumes it (item and lock deleted in one multi) once
// it is done, or Releases it for another consumer. A consumer whose
// session ends loses its lock (an ephemeral node) and the item becomes
// free again, so an item is processed at least once.
//
// Layout (kazoo's): items are persistent sequential children
// <path>/entries/entry-PPP-<seq>; the lock of an item is the ephemeral
// node <path>/taken/<item name> holding the consumer's random id. A kazoo
// LockingQueue on the same path is the same queue.
type LockingQueue struct {
	conn    *client.Conn
	entries string
	taken   string
	id      []byte
	// cur is the item this consumer holds: its name and value.
	cur *lockedItem
}

type lockedItem struct {
	name  string
	value []byte
}

// NewLockingQueue returns a consumer (and producer) of the locking queue
// at path.
func NewLockingQueue(conn *client.Conn, path string) *LockingQueue {
	return &LockingQueue{conn: conn, entries: joinPath(path, "entries"), taken: joinPath(path, "taken"),
		id: []byte(newContenderPrefix())}
}

func (q *LockingQueue) ensure(ctx context.Context) error {
	if err := ensurePath(ctx, q.conn, q.entries, zkproto.OpenACLUnsafe); err != nil {
		return err
	}
	return ensurePath(ctx, q.conn, q.taken, zkproto.OpenACLUnsafe)
}

// itemName is the name prefix of an item of priority p (kazoo's
// "{entry}-{priority:03d}-").
func itemName(p int) string { return fmt.Sprintf("entry-%03d-", p) }

// Put adds value with priority (0 to 999, lower first). As Queue.Put, a
// put whose answer was lost is not retried.
func (q *LockingQueue) Put(ctx context.Context, value []byte, priority int) error {
	return q.PutAll(ctx, [][]byte{value}, priority)
}

// PutAll adds values, in order, with one priority, atomically.
func (q *LockingQueue) PutAll(ctx context.Context, values [][]byte, priority int) error {
	if priority < 0 || priority > 999 {
		return fmt.Errorf("recipes: queue priority %d is not within 0 to 999", priority)
	}
	if err := q.ensure(ctx); err != nil {
		return err
	}
	ops := make([]client.Op, len(values))
	for i, v := range values {
		ops[i] = client.CreateOp(joinPath(q.entries, itemName(priority)), v, client.PersistentSequential, zkproto.OpenACLUnsafe)
	}
	_, err := q.conn.Multi(ctx, ops...)
	return err
}

// Get locks the first free item and returns its value, waiting for one
// while none is free, until ctx ends. If this consumer holds an item
// already, Get returns that one.
func (q *LockingQueue) Get(ctx context.Context) ([]byte, error) {
	if q.cur != nil {
		return q.cur.value, nil
	}
	if err := q.ensure(ctx); err != nil {
		return nil, err
	}
	for {
		items, _, wItems, err := q.conn.ChildrenW(ctx, q.entries)
		var taken []string
		var wTaken <-chan client.Event
		if err == nil {
			taken, _, wTaken, err = q.conn.ChildrenW(ctx, q.taken)
		}
		if isConnLoss(err) {
			if err := pause(ctx, retryBackoff); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		slices.Sort(items)
		for _, name := range items {
			if slices.Contains(taken, name) {
				continue
			}
			v, ok, err := q.take(ctx, name)
			if err != nil {
				return nil, err
			}
			if ok {
				q.cur = &lockedItem{name: name, value: v}
				return v, nil
			}
		}
		select {
		case <-wItems:
		case <-wTaken:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// take tries to lock item name; ok reports whether it is now ours.
func (q *LockingQueue) take(ctx context.Context, name string) ([]byte, bool, error) {
	lock := joinPath(q.taken, name)
	_, _, err := q.conn.Create(ctx, lock, q.id, client.Ephemeral, zkproto.OpenACLUnsafe)
	switch {
	case err == nil:
	case errors.Is(err, zkproto.ErrNodeExists):
		return nil, false, nil // another consumer took it first
	case isConnLoss(err):
		// The create may have happened: look.
		if mine, err := q.owns(ctx, name); err != nil || !mine {
			return nil, false, err
		}
	default:
		return nil, false, err
	}
	data, _, err := q.conn.Get(ctx, joinPath(q.entries, name))
	if errors.Is(err, zkproto.ErrNoNode) {
		// Consumed meanwhile: give the lock back.
		deleteNode(ctx, q.conn, lock, nil)
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// owns reports, after a sync, whether the lock of item name is this
// consumer's.
func (q *LockingQueue) owns(ctx context.Context, name string) (bool, error) {
	lock := joinPath(q.taken, name)
	for {
		_, err := q.conn.Sync(ctx, lock)
		var data []byte
		if err == nil {
			data, _, err = q.conn.Get(ctx, lock)
		}
		switch {
		case err == nil:
			return bytes.Equal(data, q.id), nil
		case errors.Is(err, zkproto.ErrNoNode):
			return false, nil
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
}

// HoldsLock reports whether this consumer still holds the item Get
// returned (its session may have ended meanwhile).
func (q *LockingQueue) HoldsLock(ctx context.Context) (bool, error) {
	if q.cur == nil {
		return false, nil
	}
	return q.owns(ctx, q.cur.name)
}

// Consume removes the held item from the queue, with its lock, in one
// multi. It reports false when no item is held (or the lock was lost: the
// item is then someone else's to take).
func (q *LockingQueue) Consume(ctx context.Context) (bool, error) {
	return q.finish(ctx, true)
}

// Release gives the held item back to the queue.
func (q *LockingQueue) Release(ctx context.Context) (bool, error) {
	return q.finish(ctx, false)
}

func (q *LockingQueue) finish(ctx context.Context, consume bool) (bool, error) {
	if q.cur == nil {
		return false, nil
	}
	mine, err := q.HoldsLock(ctx)
	if err != nil {
		return false, err
	}
	if !mine {
		q.cur = nil
		return false, nil
	}
	ops := []client.Op{client.DeleteOp(joinPath(q.taken, q.cur.name), client.AnyVersion)}
	if consume {
		ops = append([]client.Op{client.DeleteOp(joinPath(q.entries, q.cur.name), client.AnyVersion)}, ops...)
	}
	if _, err := q.conn.Multi(ctx, ops...); err != nil {
		return false, err
	}
	q.cur = nil
	return true, nil
}

// Len returns the number of items, locked or not.
func (q *LockingQueue) Len(ctx context.Context) (int, error) {
	_, st, err := q.conn.Get(ctx, q.entries)
	if errors.Is(err, zkproto.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int(st.NumChildren), nil
}
