package hc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Hold is a lock held through a Client.
type Hold struct {
	c   *Client
	seq Sequencer
	ws  *workers.Session
	// waited is the lock-delay this hold waited out for a holder that
	// was lost before it.
	waited time.Duration
}

// Sequencer returns the hold's sequencer.
func (h *Hold) Sequencer() Sequencer { return h.seq }

// Lost is closed when the worker session the hold lives in has ended: the
// hold is then over, whatever this process believes.
func (h *Hold) Lost() <-chan struct{} { return h.ws.Lost() }

// LockDelayWaited is the lock-delay Acquire waited out before returning,
// because the previous hold had ended with its session (0 otherwise).
func (h *Hold) LockDelayWaited() time.Duration { return h.waited }

// TryAcquire takes lock p if nobody holds it and returns the hold; if it
// is held (by anyone, this client included) it returns ErrHeld at once. A
// lock that is moving between workers is followed to its new place for up
// to the move wait, then ErrMoving.
func (c *Client) TryAcquire(ctx context.Context, p string) (*Hold, error) {
	if err := layout.CheckPath(p); err != nil {
		return nil, err
	}
	h, _, err := c.try(ctx, p)
	return h, err
}

// Acquire takes lock p, waiting as long as ctx allows for it to be free
// and for a move to finish.
func (c *Client) Acquire(ctx context.Context, p string) (*Hold, error) {
	if err := layout.CheckPath(p); err != nil {
		return nil, err
	}
	for {
		h, busy, err := c.try(ctx, p)
		switch {
		case err == nil:
			return h, nil
		case errors.Is(err, ErrMoving):
			continue
		case !errors.Is(err, ErrHeld):
			return nil, err
		}
		if busy == nil {
			// Held by this client: wait for its own release.
			if err := sleep(ctx, relocatePoll); err != nil {
				return nil, err
			}
			continue
		}
		// Wait for the holder node to go (release or session expiry).
		kids, _, ch, err := busy.Conn.ChildrenW(ctx, layout.WorkerLockPath(p))
		switch {
		case err == nil && len(kids) > 0:
			select {
			case <-ch:
			case <-busy.Lost():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		case err != nil && !isConnLoss(err) && !isSessionEnd(err):
			return nil, err
		}
	}
}

// try runs TryAcquire; on ErrHeld it also returns the worker session that
// saw the holder (nil when the holder is this client).
func (c *Client) try(ctx context.Context, p string) (*Hold, *workers.Session, error) {
	c.mu.Lock()
	mine := c.holds[p]
	c.mu.Unlock()
	if mine != nil {
		select {
		case <-mine.Lost():
		default:
			return nil, nil, ErrHeld
		}
	}
	var deadline time.Time
	fresh := false
	for {
		loc, err := c.locate(ctx, p, fresh)
		if err != nil {
			return nil, nil, err
		}
		ws, err := c.pool.Get(ctx, loc.cluster)
		if err != nil {
			return nil, nil, err
		}
		h, err := c.tryAt(ctx, ws, p)
		switch {
		case err == nil:
			return h, nil, nil
		case errors.Is(err, ErrHeld):
			return nil, ws, err
		case errors.Is(err, errSessionEnded):
			continue
		case !errors.Is(err, errNotHere):
			return nil, nil, err
		}
		// The copy on loc.cluster is moving or gone: look again in the
		// master, waiting for the move's commit to change its record.
		if deadline.IsZero() {
			deadline = time.Now().Add(c.cfg.moveWait)
		}
		if fresh {
			if err := waitMoved(ctx, loc, deadline); err != nil {
				return nil, nil, err
			}
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("%w: %s", ErrMoving, p)
		}
		fresh = true
	}
}

// tryAt tries to take lock p on the worker of session ws.
//
// The copy is read, and if it is enabled and has no holder node, one
// multi sets its data (generation + 1, holder = this session) conditioned
// on the version read and creates the ephemeral holder node of the new
// generation. Every acquire changes the version, and so does the move
// that disables the copy, so of two acquires (or an acquire and a move)
// based on the same read at most one succeeds, and a copy read with no
// holder node still has none when the multi applies.
func (c *Client) tryAt(ctx context.Context, ws *workers.Session, p string) (*Hold, error) {
	node := layout.WorkerLockPath(p)
	// owed is the lock-delay owed to a lost holder once one was seen (-1:
	// none). It survives retries: after a connection loss our multi may
	// have applied, and the copy then names us as holder.
	owed := time.Duration(-1)
	me := ws.Name()
	for {
		data, st, err := ws.Conn.Get(ctx, node)
		switch {
		case errors.Is(err, zkproto.ErrNoNode):
			return nil, errNotHere
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return nil, err
			}
			continue
		case isSessionEnd(err):
			return nil, errSessionEnded
		case err != nil:
			return nil, err
		}
		var rec layout.WorkerLock
		if err := layout.Unmarshal(data, &rec); err != nil {
			return nil, err
		}
		if st.NumChildren > 0 {
			// Held; by this session if a multi of ours applied without
			// its reply reaching us.
			hst, err := ws.Conn.Exists(ctx, layout.HolderPath(p, rec.Gen))
			if err == nil && hst != nil && hst.EphemeralOwner == ws.Conn.SessionID() {
				return c.granted(ctx, ws, p, rec.Gen, owed)
			}
			return nil, ErrHeld
		}
		if rec.State != layout.Enabled {
			return nil, errNotHere
		}
		if st.Version == client.AnyVersion {
			// The version has wrapped around to the value that means
			// "any": a write conditioned on it would be unconditional.
			return nil, fmt.Errorf("%w: %s", ErrExhausted, p)
		}
		if rec.Holder != "" && rec.Holder != me {
			owed = max(owed, min(max(time.Duration(rec.DelayMs)*time.Millisecond, 0), MaxLockDelay))
		}
		next := rec
		next.Gen++
		next.Holder = me
		// Should this hold end with its session while it still waits out
		// a lost holder's delay, the next holder must wait at least that.
		next.DelayMs = max(c.cfg.lockDelay, owed).Milliseconds()
		_, err = ws.Conn.Multi(ctx, client.SetOp(node, layout.Marshal(next), st.Version),
			client.CreateOp(layout.HolderPath(p, next.Gen), nil, client.Ephemeral, zkproto.OpenACLUnsafe))
		switch {
		case err == nil:
			return c.granted(ctx, ws, p, next.Gen, owed)
		case errors.Is(err, zkproto.ErrBadVersion), errors.Is(err, zkproto.ErrNodeExists):
			// Another acquire, a release or a move came first: read again.
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return nil, err
			}
		case isSessionEnd(err):
			return nil, errSessionEnded
		default:
			return nil, err
		}
	}
}

// granted records the hold of generation gen and, when a lost holder's
// lock-delay is owed, waits it out before returning. The delay is counted
// from the reply to the acquire, which the worker applied after it had
// removed the lost holder's node, so nobody acts under the lock before the
// lost session's end plus the delay, with no clocks compared.
func (c *Client) granted(ctx context.Context, ws *workers.Session, p string, gen int64, owed time.Duration) (*Hold, error) {
	h := &Hold{c: c, seq: Sequencer{Lock: p, Cluster: ws.Cluster, Generation: gen}, ws: ws}
	if owed > 0 {
		if err := sleep(ctx, owed); err != nil {
			// Give the lock up, leaving the copy's holder naming us
			// (with the delay still owed), so that the next holder
			// waits the delay in full.
			go h.release(context.Background(), true)
			return nil, err
		}
		h.waited = owed
	}
	c.mu.Lock()
	c.holds[p] = h
	c.mu.Unlock()
	return h, nil
}

// Release releases lock p held through this client (the paper's
// Release).
func (c *Client) Release(ctx context.Context, p string) error {
	c.mu.Lock()
	h := c.holds[p]
	c.mu.Unlock()
	if h == nil {
		return fmt.Errorf("%w: %s", ErrNotHeld, p)
	}
	return h.Release(ctx)
}

// Release ends the hold. It returns ErrNotHeld when the hold had already
// ended with its session.
func (h *Hold) Release(ctx context.Context) error {
	err := h.release(ctx, false)
	h.c.mu.Lock()
	if h.c.holds[h.seq.Lock] == h {
		delete(h.c.holds, h.seq.Lock)
	}
	h.c.mu.Unlock()
	return err
}

// release deletes the holder node and clears the copy's Holder in one
// multi conditioned on the copy's version (the state is kept: a move may
// have disabled the copy meanwhile, and it then moves right after). A
// release that comes after the hold ended with its session finds no
// holder node and changes nothing. keepMark deletes only the holder node,
// so that the next holder waits the lock-delay as after a lost session.
func (h *Hold) release(ctx context.Context, keepMark bool) error {
	p, conn := h.seq.Lock, h.ws.Conn
	node, holder := layout.WorkerLockPath(p), layout.HolderPath(p, h.seq.Generation)
	retried := false
	for {
		data, st, err := conn.Get(ctx, node)
		switch {
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return err
			}
			continue
		case isSessionEnd(err):
			return fmt.Errorf("%w: %s (session ended)", ErrNotHeld, p)
		case err != nil:
			return err
		}
		var rec layout.WorkerLock
		if err := layout.Unmarshal(data, &rec); err != nil {
			return err
		}
		if rec.Holder == h.ws.Name() {
			rec.Holder, rec.DelayMs = "", 0
		}
		ops := []client.Op{client.DeleteOp(holder, client.AnyVersion), client.SetOp(node, layout.Marshal(rec), st.Version)}
		if keepMark || st.Version == client.AnyVersion {
			// Only the holder node goes, asked for or because an
			// exhausted version cannot condition the write; the next
			// holder then waits the lock-delay.
			ops = ops[:1]
		}
		_, err = conn.Multi(ctx, ops...)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zkproto.ErrNoNode):
			if retried {
				return nil // our earlier multi applied before the connection broke
			}
			return fmt.Errorf("%w: %s (session ended)", ErrNotHeld, p)
		case errors.Is(err, zkproto.ErrBadVersion):
		case isConnLoss(err):
			retried = true
			if err := sleep(ctx, retryPause); err != nil {
				return err
			}
		case isSessionEnd(err):
			return fmt.Errorf("%w: %s (session ended)", ErrNotHeld, p)
		default:
			return err
		}
	}
}
