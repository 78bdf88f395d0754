package recipes

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// holdState is what a Locker knows of its current hold, guarded so that
// Sequencer can be called from another goroutine than Lock and Unlock.
type holdState struct {
	mu    sync.Mutex
	held  bool
	node  string
	czxid int64
	mode  Mode
}

func (h *holdState) isHeld() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.held
}

func (h *holdState) set(node string, czxid int64, mode Mode) {
	h.mu.Lock()
	h.held, h.node, h.czxid, h.mode = true, node, czxid, mode
	h.mu.Unlock()
}

func (h *holdState) clear() {
	h.mu.Lock()
	h.held, h.node, h.czxid = false, "", 0
	h.mu.Unlock()
}

// current returns the held node, or ErrNotLocked.
func (h *holdState) current() (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return "", ErrNotLocked
	}
	return h.node, nil
}

func (h *holdState) sequencer() (Sequencer, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held {
		return Sequencer{}, ErrNotLocked
	}
	return Sequencer{Path: h.node, Mode: h.mode, Generation: h.czxid}, nil
}

// createWait is a synchronous create that keeps hold of the request: if
// ctx ends first, the node the create may still make is deleted once the
// create completes, so an abandoned Lock leaves nothing behind.
func createWait(ctx context.Context, conn *client.Conn, p string, data []byte, mode client.CreateMode, acl []zkproto.ACL) (client.CreateResult, error) {
	cl := conn.CreateAsync(p, data, mode, acl)
	res, err := cl.Wait(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		abandonCreate(conn, cl)
	}
	return res, err
}

// exclusiveNode is the part of a test-and-set style lock (one fixed node
// that whoever creates it holds) shared by TASLock and AsyncTASLock.
type exclusiveNode struct {
	conn   *client.Conn
	dir    string
	node   string
	cfg    lockConfig
	token  []byte // starts the node's data: tells our node from others'
	marker *delayMarker
	state  holdState
}

func newExclusiveNode(conn *client.Conn, dir string, cfg lockConfig) *exclusiveNode {
	e := &exclusiveNode{conn: conn, dir: dir, node: joinPath(dir, tasNodeName), cfg: cfg}
	e.token = []byte(newContenderPrefix())
	if cfg.lockDelay > 0 {
		e.marker = newDelayMarker(conn, dir, cfg.lockDelay)
	}
	return e
}

// data is the node's data: our token, then the identifier.
func (e *exclusiveNode) data() []byte {
	return append(append([]byte{}, e.token...), e.cfg.data...)
}

// prepare checks the path. The directory is created when a create finds it
// missing (NONODE), not here: ensuring it on every acquisition would cost
// each one a write round trip (two instead of one for an uncontended
// test-and-set, which is what matters at a high server round trip: The Cost
// of Consensus, Fig. 10).
func (e *exclusiveNode) prepare(ctx context.Context) error {
	if e.state.isHeld() {
		return ErrAlreadyLocked
	}
	if err := validLockPath(e.dir); err != nil {
		return err
	}
	// A fresh token per attempt: our node of an earlier hold never passes
	// for this one's.
	e.token = []byte(newContenderPrefix())
	return ctx.Err()
}

// abandon removes, in the background, the node of a Lock that gives up
// after one of its creates lost its answer: that create may have made the
// node, which no later attempt (with a fresh token) would take for its
// own, so every contender, this one included, would wait on it until the
// session ends.
func (e *exclusiveNode) abandon() {
	owned := e.ownedBy(e.token)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		for ctx.Err() == nil {
			st, err := owned(ctx)
			switch {
			case isConnLoss(err):
				time.Sleep(50 * time.Millisecond)
				continue
			case err == nil && st != nil:
				if err := e.conn.Delete(ctx, e.node, st.Version); isConnLoss(err) {
					continue // it may not have happened: check again
				}
			}
			return
		}
	}()
}

// ownedStat reports whether the node exists and is ours: after a create
// lost to a connection loss, that is how we learn whether it happened.
func (e *exclusiveNode) ownedStat(ctx context.Context) (*zkproto.Stat, error) {
	return e.ownedBy(e.token)(ctx)
}

// ownedBy is ownedStat for the attempt whose token is token.
func (e *exclusiveNode) ownedBy(token []byte) func(context.Context) (*zkproto.Stat, error) {
	return func(ctx context.Context) (*zkproto.Stat, error) { return e.owned(ctx, token) }
}

func (e *exclusiveNode) owned(ctx context.Context, token []byte) (*zkproto.Stat, error) {
	// A plain read may come from a server that has not applied the latest
	// writes (after a failover the session may have moved to one), and our
	// own node of an earlier hold, already deleted, would look held:
	// sync first, so the read follows every write committed before it.
	if _, err := e.conn.Sync(ctx, e.node); err != nil {
		return nil, err
	}
	data, st, err := e.conn.Get(ctx, e.node)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.EphemeralOwner == e.conn.SessionID() && bytes.HasPrefix(data, token) {
		return st, nil
	}
	return nil, nil
}

// acquired completes a hold once the node is ours: the lock-delay, then
// the hold state. If the lock-delay step fails the node is released.
func (e *exclusiveNode) acquired(ctx context.Context, czxid int64) error {
	if e.marker != nil {
		if err := e.marker.acquired(ctx, e.cfg.acl); err != nil {
			e.marker.abandon(e.node)
			return err
		}
	}
	e.state.set(e.node, czxid, Exclusive)
	return nil
}

// unlock releases the hold.
func (e *exclusiveNode) unlock(ctx context.Context) error {
	node, err := e.state.current()
	if err != nil {
		return err
	}
	if e.marker != nil {
		err = e.marker.release(ctx, node, e.ownedStat)
	} else {
		err = deleteNode(ctx, e.conn, node, e.ownedStat)
	}
	if err == nil || errors.Is(err, zkproto.ErrSessionExpired) || errors.Is(err, client.ErrClosed) {
		// With the session gone, so is the node: nothing is held.
		e.state.clear()
	}
	return err
}
