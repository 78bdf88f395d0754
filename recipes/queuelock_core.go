package recipes

import (
	"context"
	"errors"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// queueContender is the part of a queue-style lock (a sequential node per
// contender, ordered by sequence) shared by QueueLock, AsyncQueueLock and
// the read/write locks: the node's naming, its creation with recovery
// from connection loss, and the hold.
type queueContender struct {
	conn     *client.Conn
	dir      string
	name     string   // our kind of node: __lock__ or __rlock__
	blockers []string // kinds of node we wait for
	mode     Mode
	cfg      lockConfig
	marker   *delayMarker // exclusive holds with a lock-delay only
	state    holdState

	// The node of the current attempt, set by create.
	prefix string // <uuid><name>: finds our node after a connection loss
	node   string // child name
	seq    string // its sequence suffix, as text (kazoo's order)
	czxid  int64
}

func newQueueContender(conn *client.Conn, dir, name string, blockers []string, mode Mode, cfg lockConfig) *queueContender {
	q := &queueContender{conn: conn, dir: dir, name: name, blockers: blockers, mode: mode, cfg: cfg}
	if mode == Exclusive && cfg.lockDelay > 0 {
		q.marker = newDelayMarker(conn, dir, cfg.lockDelay)
	}
	return q
}

// prepare checks the path and starts a fresh contender. As for
// exclusiveNode.prepare, the directory is created only when a create finds
// it missing.
func (q *queueContender) prepare(ctx context.Context) error {
	if q.state.isHeld() {
		return ErrAlreadyLocked
	}
	if err := validLockPath(q.dir); err != nil {
		return err
	}
	q.prefix, q.node, q.seq, q.czxid = newContenderPrefix()+q.name, "", "", 0
	return ctx.Err()
}

// setNode records the node a create made (full path p).
func (q *queueContender) setNode(p string, czxid int64) {
	q.node = p[strings.LastIndexByte(p, '/')+1:]
	q.seq = q.node[len(q.prefix):]
	q.czxid = czxid
}

// createSync creates our node and waits for it.
func (q *queueContender) createSync(ctx context.Context) error {
	for {
		res, err := createWait(ctx, q.conn, joinPath(q.dir, q.prefix), q.cfg.data, client.EphemeralSequential, q.cfg.acl)
		switch {
		case err == nil:
			q.setNode(res.Path, res.Stat.Czxid)
			return nil
		case isConnLoss(err):
			found, err := q.findNode(ctx)
			if err != nil {
				return err
			}
			if found {
				return nil
			}
		case errors.Is(err, zkproto.ErrNoNode):
			if err := ensurePath(ctx, q.conn, q.dir, q.cfg.acl); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// createListed creates our node with a listing of the queue pipelined
// right behind it, so that both are answered after one round trip (the
// server answers a session's requests in order: the listing sees the
// create). It returns that listing, or nil when the caller must list
// again (the create needed a retry, or the listing failed).
func (q *queueContender) createListed(ctx context.Context) ([]string, error) {
	create := q.conn.CreateAsync(joinPath(q.dir, q.prefix), q.cfg.data, client.EphemeralSequential, q.cfg.acl)
	list := q.conn.ChildrenAsync(q.dir)
	res, err := create.Wait(ctx)
	switch {
	case err == nil:
		q.setNode(res.Path, res.Stat.Czxid)
	case ctx.Err() != nil:
		abandonCreate(q.conn, create)
		return nil, ctx.Err()
	case isConnLoss(err):
		// The create may have happened: createSync's rules find it.
		found, err := q.findNode(ctx)
		if err != nil || found {
			return nil, err
		}
		return nil, q.createSync(ctx)
	case errors.Is(err, zkproto.ErrNoNode):
		return nil, q.createSync(ctx) // it makes the directory
	default:
		return nil, err
	}
	lr, err := list.Wait(ctx)
	if err != nil {
		return nil, nil
	}
	return lr.Children, nil
}

// findNode looks for our node by its prefix after a create whose reply
// was lost (kazoo's _find_node, Curator's protection mode).
func (q *queueContender) findNode(ctx context.Context) (bool, error) {
	p, czxid, err := findByPrefix(ctx, q.conn, q.dir, q.prefix)
	if err != nil || p == "" {
		return false, err
	}
	q.setNode(p, czxid)
	return true, nil
}

// findByPrefix returns the path and czxid of the child of dir whose name
// starts with prefix ("" when there is none), retrying through
// connection losses.
func findByPrefix(ctx context.Context, conn *client.Conn, dir, prefix string) (string, int64, error) {
	for {
		// Sync first: after a failover the session may read from a server
		// that has not applied our create yet; missing it, we would create
		// a second node and leave the first, still ours, blocking everyone.
		_, err := conn.Sync(ctx, dir)
		var kids []string
		if err == nil {
			kids, _, err = conn.Children(ctx, dir)
		}
		switch {
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return "", 0, err
			}
			continue
		case errors.Is(err, zkproto.ErrNoNode):
			return "", 0, nil
		case err != nil:
			return "", 0, err
		}
		for _, k := range kids {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			st, err := conn.Exists(ctx, joinPath(dir, k))
			if err != nil && !isConnLoss(err) {
				return "", 0, err
			}
			if st != nil {
				return joinPath(dir, k), st.Czxid, nil
			}
		}
		return "", 0, nil
	}
}

// nodePath is the full path of our node.
func (q *queueContender) nodePath() string { return joinPath(q.dir, q.node) }

// abandon removes our node after a failed Lock. When no create was
// confirmed, one may still have made the node (its answer lost, or not
// yet come): it is looked for by our prefix, in the background, once the
// connection allows, since no later attempt (with a fresh prefix) would
// know it and every contender behind it would wait until the session
// ended.
func (q *queueContender) abandon() {
	if q.node != "" {
		deleteInBackground(q.conn, q.nodePath())
		q.node = ""
		return
	}
	conn, dir, prefix := q.conn, q.dir, q.prefix
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		if p, _, err := findByPrefix(ctx, conn, dir, prefix); err == nil && p != "" {
			deleteInBackground(conn, p)
		}
	}()
}

// acquired completes a hold: the lock-delay (exclusive holds), then the
// hold state. On an error our node is removed.
func (q *queueContender) acquired(ctx context.Context) error {
	if q.marker != nil {
		if err := q.marker.acquired(ctx, q.cfg.acl); err != nil {
			q.marker.abandon(q.nodePath())
			q.node = ""
			return err
		}
	}
	q.state.set(q.nodePath(), q.czxid, q.mode)
	return nil
}

func (q *queueContender) unlock(ctx context.Context) error {
	node, err := q.state.current()
	if err != nil {
		return err
	}
	if q.marker != nil {
		err = q.marker.release(ctx, node, nil)
	} else {
		err = deleteNode(ctx, q.conn, node, nil)
	}
	if err == nil || errors.Is(err, zkproto.ErrSessionExpired) || errors.Is(err, client.ErrClosed) {
		q.state.clear()
		q.node = ""
	}
	return err
}
