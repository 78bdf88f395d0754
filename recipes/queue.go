package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Queue is a distributed FIFO queue with priorities, in kazoo's layout
// (kazoo.recipe.queue.Queue): an item is a persistent sequential child
// entry-PPP-<seq> of the queue node holding the value, PPP the priority
// (0 to 999, lower first; 100 by default), so that the children sorted by
// name are the queue in order: by priority, then first in, first out.
//
// A consumer takes the first child: it reads it and deletes it; the delete
// decides between consumers that race for the same item (the loser moves
// on to the next). As kazoo's, consumption is at most once: an item whose
// delete's answer was lost to a connection loss is not returned, since it
// may have been taken by this consumer or by another. A kazoo Queue on the
// same path is the same queue.
type Queue struct {
	conn *client.Conn
	path string
}

// DefaultPriority is kazoo's default priority.
const DefaultPriority = 100

// queueEntryPrefix starts the name of every item.
const queueEntryPrefix = "entry-"

// NewQueue returns the queue at path.
func NewQueue(conn *client.Conn, path string) *Queue { return &Queue{conn: conn, path: path} }

// Put adds value with priority (0 to 999, lower first). A put that fails
// with a connection loss may or may not have happened; it is not retried,
// so that an item is never added twice behind the caller's back.
func (q *Queue) Put(ctx context.Context, value []byte, priority int) error {
	if priority < 0 || priority > 999 {
		return fmt.Errorf("recipes: queue priority %d is not within 0 to 999", priority)
	}
	name := joinPath(q.path, fmt.Sprintf("%s%03d-", queueEntryPrefix, priority))
	for {
		_, _, err := q.conn.Create(ctx, name, value, client.PersistentSequential, zkproto.OpenACLUnsafe)
		if !errors.Is(err, zkproto.ErrNoNode) {
			return err
		}
		if err := ensurePath(ctx, q.conn, q.path, zkproto.OpenACLUnsafe); err != nil {
			return err
		}
	}
}

// Get removes and returns the first item; ok is false when the queue is
// empty.
func (q *Queue) Get(ctx context.Context) (value []byte, ok bool, err error) {
	for {
		kids, _, err := q.conn.Children(ctx, q.path)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		v, ok, err := q.takeFirst(ctx, kids)
		if err != nil || ok {
			return v, ok, err
		}
		if !slices.ContainsFunc(kids, isQueueEntry) {
			return nil, false, nil
		}
	}
}

// Take removes and returns the first item, waiting for one while the
// queue is empty, until ctx ends.
func (q *Queue) Take(ctx context.Context) ([]byte, error) {
	if err := ensurePath(ctx, q.conn, q.path, zkproto.OpenACLUnsafe); err != nil {
		return nil, err
	}
	for {
		kids, _, w, err := q.conn.ChildrenW(ctx, q.path)
		if err != nil {
			if isConnLoss(err) {
				if err := pause(ctx, retryBackoff); err != nil {
					return nil, err
				}
				continue
			}
			return nil, err
		}
		v, ok, err := q.takeFirst(ctx, kids)
		if err != nil || ok {
			return v, err
		}
		if !slices.ContainsFunc(kids, isQueueEntry) {
			if err := waitEvent(ctx, w); err != nil && !isConnLoss(err) {
				return nil, err
			}
		}
	}
}

// takeFirst tries the items of kids in order and returns the first one
// this consumer deleted; ok is false when others took them all first.
func (q *Queue) takeFirst(ctx context.Context, kids []string) ([]byte, bool, error) {
	kids = slices.DeleteFunc(slices.Clone(kids), func(k string) bool { return !isQueueEntry(k) })
	slices.Sort(kids)
	for _, k := range kids {
		p := joinPath(q.path, k)
		data, st, err := q.conn.Get(ctx, p)
		if errors.Is(err, zkproto.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		err = q.conn.Delete(ctx, p, st.Version)
		switch {
		case err == nil:
			return data, true, nil
		case errors.Is(err, zkproto.ErrNoNode), errors.Is(err, zkproto.ErrBadVersion):
			continue // another consumer took it
		case isConnLoss(err):
			continue // taken, by us or another: at most once
		default:
			return nil, false, err
		}
	}
	return nil, false, nil
}

// Len returns the number of items.
func (q *Queue) Len(ctx context.Context) (int, error) {
	kids, _, err := q.conn.Children(ctx, q.path)
	if errors.Is(err, zkproto.ErrNoNode) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n := 0
	for _, k := range kids {
		if isQueueEntry(k) {
			n++
		}
	}
	return n, err
}

func isQueueEntry(name string) bool { return strings.HasPrefix(name, queueEntryPrefix) }
