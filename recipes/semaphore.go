package recipes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Semaphore is a counting semaphore in kazoo's layout
// (kazoo.recipe.lock.Semaphore): at most MaxLeases holders at once.
//
// The node at path holds the number of leases as decimal text; each
// holder has an ephemeral child named by a random hex id holding its
// identifier. A contender first takes the queue lock <path>-__lock__ (a
// QueueLock, kazoo's Lock there), so that only one contender at a time
// counts the leases and the others wait in line without a herd; holding
// it, it creates its lease if fewer than MaxLeases exist, else it waits
// for the lease children to change. A kazoo Semaphore on the same path
// with the same number of leases is the same semaphore.
type Semaphore struct {
	conn *client.Conn
	path string
	max  int
	id   []byte
	name string // our lease node
	lock *QueueLock
}

// ErrLeaseMismatch reports a semaphore node that records another number
// of leases than the one asked for.
var ErrLeaseMismatch = errors.New("recipes: the semaphore records another number of leases")

// NewSemaphore returns a contender for the semaphore at path with
// maxLeases leases; identifier is stored in its lease node.
func NewSemaphore(conn *client.Conn, path string, maxLeases int, identifier string) *Semaphore {
	return &Semaphore{conn: conn, path: path, max: maxLeases, id: []byte(identifier), name: newContenderPrefix(),
		lock: NewQueueLock(conn, path+"-__lock__", WithIdentifier([]byte(identifier)))}
}

// Acquire blocks until this contender holds a lease or ctx ends.
func (s *Semaphore) Acquire(ctx context.Context) error {
	if err := s.ensure(ctx); err != nil {
		return err
	}
	me := joinPath(s.path, s.name)
	if err := s.lock.Lock(ctx); err != nil {
		return err
	}
	defer s.lock.Unlock(context.WithoutCancel(ctx))
	for {
		kids, _, w, err := s.conn.ChildrenW(ctx, s.path)
		if err == nil {
			if slices.Contains(kids, s.name) {
				return nil // ours already (a create whose answer was lost)
			}
			if len(kids) < s.max {
				_, _, err = s.conn.Create(ctx, me, s.id, client.Ephemeral, zkproto.OpenACLUnsafe)
				if err == nil || errors.Is(err, zkproto.ErrNodeExists) {
					return nil
				}
			} else {
				err = waitEvent(ctx, w)
			}
		}
		if err != nil && !isConnLoss(err) {
			return err
		}
		if isConnLoss(err) {
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
		}
	}
}

// ensure creates the semaphore node with the number of leases, or checks
// the number an existing one records (kazoo's check).
func (s *Semaphore) ensure(ctx context.Context) error {
	for {
		data, _, err := s.conn.Get(ctx, s.path)
		switch {
		case err == nil:
			if n, perr := strconv.Atoi(string(data)); perr == nil && n != s.max {
				return fmt.Errorf("%w: %s has %d, asked for %d", ErrLeaseMismatch, s.path, n, s.max)
			}
			return nil
		case errors.Is(err, zkproto.ErrNoNode):
			if parent := s.path[:max(0, strings.LastIndexByte(s.path, '/'))]; parent != "" {
				if err := ensurePath(ctx, s.conn, parent, zkproto.OpenACLUnsafe); err != nil {
					return err
				}
			}
			_, _, err = s.conn.Create(ctx, s.path, []byte(strconv.Itoa(s.max)), client.Persistent, zkproto.OpenACLUnsafe)
			if err != nil && !errors.Is(err, zkproto.ErrNodeExists) && !isConnLoss(err) {
				return err
			}
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// Release gives the lease back.
func (s *Semaphore) Release(ctx context.Context) error {
	return deleteNode(ctx, s.conn, joinPath(s.path, s.name), nil)
}

// Holders returns the identifiers of the current lease holders.
func (s *Semaphore) Holders(ctx context.Context) ([]string, error) {
	kids, _, err := s.conn.Children(ctx, s.path)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		data, _, err := s.conn.Get(ctx, joinPath(s.path, k))
		if errors.Is(err, zkproto.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, string(data))
	}
	return out, nil
}
