package master

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The move protocol. A move of lock L from worker W1 (copy number p) to
// W2 (copy number p+1) is the record /hc/moves/<L> in the master, whose
// phase says which step has completed. Each step acts on a worker, then
// advances the phase with a setData conditioned on the record's version;
// the next step starts only from the recorded phase. Resuming a move is
// running the step of its recorded phase again, and every step is
// idempotent:
//
//	planned      → ensure a copy on W2 (state gone if new), record its version  → prepared
//	prepared     → W1's copy enabled@p becomes moving@p (versioned setData)      → disabled
//	disabled     → W1's copy still has a holder node: record it                  → recalcitrant
//	disabled,
//	recalcitrant → once W1's copy, moving, has no holder node: W2's copy
//	               becomes enabled@p+1 with W1's generation and lost-holder
//	               mark, by a setData conditioned on the version recorded at
//	               prepared                                                     → claimed
//	claimed      → one master multi: the lock's record points to W2 with
//	               number p+1, its lock-count entry moves from W1 to W2, and
//	               the phase                                                     → committed
//	committed    → W1's copy moving@p becomes gone@p; the record is deleted      → (done)
//
// docs/hierarchical-locks.md argues why this never leaves two copies
// enabled and never lowers a generation, whoever runs the steps and
// however often they are interrupted.

// Point is a place in the move protocol, where Config.AfterStep runs.
type Point struct {
	Lock string
	// Phase is the phase the step leads to.
	Phase layout.Phase
	// Recorded is false right after the step's action on a worker and
	// true once the phase is recorded in the master.
	Recorded bool
}

// ErrStopped is returned by Run when Config.AfterStep stopped the daemon.
var ErrStopped = errors.New("hc: daemon stopped by its step hook")

// errInconsistent reports a state the protocol never produces; the move
// is left for an operator (and logged) rather than forced.
var errInconsistent = errors.New("hc: inconsistent lock state")

// mover executes the moves recorded in the master.
type mover struct {
	master    *client.Conn
	pool      *workers.Pool
	log       *slog.Logger
	afterStep func(Point) error
}

// hook runs the step hook, if any.
func (m *mover) hook(lock string, ph layout.Phase, recorded bool) error {
	if m.afterStep == nil {
		return nil
	}
	if err := m.afterStep(Point{Lock: lock, Phase: ph, Recorded: recorded}); err != nil {
		return fmt.Errorf("%w: %v", ErrStopped, err)
	}
	return nil
}

// run executes the move of lock until its record is gone (nil), ctx ends
// or a step fails.
func (m *mover) run(ctx context.Context, lock string) error {
	for {
		var mv layout.Move
		st, err := getRecord(ctx, m.master, layout.MovePath(lock), &mv)
		if errors.Is(err, zkproto.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		next, err := m.step(ctx, mv)
		if err != nil {
			return fmt.Errorf("move of %s (%s → %s, %s): %w", lock, mv.From, mv.To, mv.Phase, err)
		}
		if next == nil {
			continue // nothing to record (the step waited, or committed)
		}
		if next.Phase == "" {
			err = m.master.Delete(ctx, layout.MovePath(lock), st.Version)
		} else {
			_, err = m.master.Set(ctx, layout.MovePath(lock), layout.Marshal(next), st.Version)
		}
		switch {
		case err == nil:
			if err := m.hook(lock, next.Phase, true); err != nil {
				return err
			}
		case errors.Is(err, zkproto.ErrBadVersion), errors.Is(err, zkproto.ErrNoNode), isConnLoss(err):
			// Another executor advanced it, or the reply was lost: the
			// loop reads the record again.
		default:
			return err
		}
	}
}

// step performs the action of mv's phase and returns the record of the
// next phase (Phase "" when the move is over), or nil when nothing is to
// be recorded yet.
func (m *mover) step(ctx context.Context, mv layout.Move) (*layout.Move, error) {
	next := mv
	switch mv.Phase {
	case layout.Planned:
		dv, err := m.prepare(ctx, mv)
		if err != nil {
			return nil, err
		}
		next.Phase, next.DestVersion = layout.Prepared, dv
	case layout.Prepared:
		if err := m.disable(ctx, mv); err != nil {
			return nil, err
		}
		next.Phase = layout.Disabled
	case layout.Disabled, layout.Recalcitrant:
		gen, held, err := m.drainAndClaim(ctx, mv)
		if err != nil {
			return nil, err
		}
		if held {
			if mv.Phase == layout.Recalcitrant {
				return nil, nil
			}
			next.Phase = layout.Recalcitrant
			return &next, nil
		}
		next.Phase, next.Gen = layout.Claimed, gen
	case layout.Claimed:
		// No worker action: the commit multi records its own phase.
		return nil, m.commit(ctx, mv)
	case layout.Committed:
		if err := m.disown(ctx, mv); err != nil {
			return nil, err
		}
		next.Phase = ""
	default:
		return nil, fmt.Errorf("%w: unknown phase %q", errInconsistent, mv.Phase)
	}
	if err := m.hook(mv.Lock, next.Phase, false); err != nil {
		return nil, err
	}
	return &next, nil
}

// readCopy reads a worker's copy of lock, through connection losses.
func readCopy(ctx context.Context, ws *workers.Session, lock string) (layout.WorkerLock, *zkproto.Stat, error) {
	var rec layout.WorkerLock
	st, err := getRecord(ctx, ws.Conn, layout.WorkerLockPath(lock), &rec)
	return rec, st, err
}

// prepare makes sure the destination has a copy (a new one is a
// tombstone: state gone, number 0) and returns its version, which fences
// the claim: any write to the copy after this read, such as another
// move's claim, makes a stale claim fail.
func (m *mover) prepare(ctx context.Context, mv layout.Move) (int32, error) {
	ws, err := m.pool.Get(ctx, mv.To)
	if err != nil {
		return 0, err
	}
	if err := workers.EnsureCopy(ctx, ws.Conn, mv.Lock, layout.WorkerLock{State: layout.Gone}); err != nil {
		return 0, err
	}
	rec, st, err := readCopy(ctx, ws, mv.Lock)
	if err != nil {
		return 0, err
	}
	if rec.State == layout.Enabled {
		return 0, fmt.Errorf("%w: destination copy on %s is enabled (number %d)", errInconsistent, mv.To, rec.Placement)
	}
	if st.Version == client.AnyVersion {
		return 0, fmt.Errorf("destination copy on %s has exhausted its version; move the lock elsewhere", mv.To)
	}
	return st.Version, nil
}

// disable turns the source copy enabled@p into moving@p. From then on no
// acquire succeeds there: an acquire is a multi conditioned on the
// version at which it read the copy enabled, and this write changes it.
// (At an exhausted version, -1, the write is unconditional; it is still
// safe, since acquirers refuse such a copy and releases then write
// nothing but the holder node's deletion: nobody else writes the copy.)
func (m *mover) disable(ctx context.Context, mv layout.Move) error {
	ws, err := m.pool.Get(ctx, mv.From)
	if err != nil {
		return err
	}
	if err := syncRead(ctx, ws.Conn, layout.LocksDir); err != nil {
		return err
	}
	for {
		rec, st, err := readCopy(ctx, ws, mv.Lock)
		if err != nil {
			return err
		}
		if rec.Placement != mv.Placement {
			return fmt.Errorf("%w: source copy on %s has number %d, move is of %d", errInconsistent, mv.From, rec.Placement, mv.Placement)
		}
		if rec.State != layout.Enabled {
			return nil // done before an interruption
		}
		rec.State = layout.Moving
		_, err = ws.Conn.Set(ctx, layout.WorkerLockPath(mv.Lock), layout.Marshal(rec), st.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zkproto.ErrBadVersion) && !isConnLoss(err) {
			return err
		}
	}
}

// drainAndClaim waits until the source copy (moving) has no holder node,
// then enables the destination copy with the source's generation. It
// returns held=true, without waiting, when a holder is there and the move
// is not yet recorded recalcitrant. The source copy is read once it is
// moving: no holder node can appear after that, so one read without one
// is final, and so is its generation.
func (m *mover) drainAndClaim(ctx context.Context, mv layout.Move) (gen int64, held bool, err error) {
	src, err := m.pool.Get(ctx, mv.From)
	if err != nil {
		return 0, false, err
	}
	if err := syncRead(ctx, src.Conn, layout.LocksDir); err != nil {
		return 0, false, err
	}
	node := layout.WorkerLockPath(mv.Lock)
	var rec layout.WorkerLock
	for {
		r, st, err := readCopy(ctx, src, mv.Lock)
		if err != nil {
			return 0, false, err
		}
		if r.Placement != mv.Placement || r.State != layout.Moving {
			return 0, false, fmt.Errorf("%w: source copy on %s is %s@%d, move is of %d", errInconsistent, mv.From, r.State, r.Placement, mv.Placement)
		}
		if st.NumChildren == 0 {
			rec = r
			break
		}
		if mv.Phase == layout.Disabled {
			return 0, true, nil
		}
		// Recalcitrant: wait for the holder node to go (a release, or its
		// session's expiry).
		kids, _, ch, err := src.Conn.ChildrenW(ctx, node)
		switch {
		case err == nil && len(kids) > 0:
			select {
			case <-ch:
			case <-src.Lost():
			case <-ctx.Done():
				return 0, false, ctx.Err()
			}
		case err != nil && !isConnLoss(err) && !errors.Is(err, zkproto.ErrSessionExpired) && !errors.Is(err, client.ErrClosed):
			return 0, false, err
		}
		if src, err = m.pool.Get(ctx, mv.From); err != nil {
			return 0, false, err
		}
	}
	dest, err := m.pool.Get(ctx, mv.To)
	if err != nil {
		return 0, false, err
	}
	if err := syncRead(ctx, dest.Conn, layout.LocksDir); err != nil {
		return 0, false, err
	}
	claim := layout.WorkerLock{State: layout.Enabled, Placement: mv.Placement + 1, Gen: rec.Gen,
		Holder: rec.Holder, DelayMs: rec.DelayMs}
	for {
		_, setErr := dest.Conn.Set(ctx, node, layout.Marshal(claim), mv.DestVersion)
		if setErr == nil {
			return rec.Gen, false, nil
		}
		if !errors.Is(setErr, zkproto.ErrBadVersion) && !isConnLoss(setErr) {
			return 0, false, setErr
		}
		// Claimed before (an interrupted run, another executor, or this
		// write before its reply was lost)? Only this move writes number
		// p+1 on the destination.
		got, _, err := readCopy(ctx, dest, mv.Lock)
		if err != nil {
			return 0, false, err
		}
		if got.Placement >= mv.Placement+1 {
			return rec.Gen, false, nil
		}
		if !isConnLoss(setErr) {
			return 0, false, fmt.Errorf("%w: destination copy on %s changed since prepared (%s@%d)", errInconsistent, mv.To, got.State, got.Placement)
		}
	}
}

// commit points the master to the destination: the lock's record (number
// p+1 on To), its lock-count entry moved from From to To, and the move's
// phase, in one multi conditioned on both records' versions.
func (m *mover) commit(ctx context.Context, mv layout.Move) error {
	var rec layout.Node
	st, err := getRecord(ctx, m.master, layout.NamePath(mv.Lock), &rec)
	if err != nil {
		return err
	}
	mst, err := m.master.Exists(ctx, layout.MovePath(mv.Lock))
	if err != nil || mst == nil {
		return err // gone: another executor finished; the caller re-reads
	}
	if rec.Cluster == mv.To && rec.Placement == mv.Placement+1 {
		return nil // committed by another executor; the caller re-reads
	}
	if rec.Cluster != mv.From || rec.Placement != mv.Placement {
		return fmt.Errorf("%w: master record says %s@%d", errInconsistent, rec.Cluster, rec.Placement)
	}
	rec.Cluster, rec.Placement = mv.To, mv.Placement+1
	committed := mv
	committed.Phase = layout.Committed
	_, err = m.master.Multi(ctx,
		client.SetOp(layout.NamePath(mv.Lock), layout.Marshal(rec), st.Version),
		client.DeleteOp(layout.PlacementEntry(mv.From, mv.Lock), client.AnyVersion),
		client.CreateOp(layout.PlacementEntry(mv.To, mv.Lock), nil, client.Persistent, zkproto.OpenACLUnsafe),
		client.SetOp(layout.MovePath(mv.Lock), layout.Marshal(committed), mst.Version))
	switch {
	case err == nil:
		return m.hook(mv.Lock, layout.Committed, true)
	case errors.Is(err, zkproto.ErrBadVersion), isConnLoss(err):
		return nil // the caller re-reads the move record
	}
	return err
}

// disown turns the source copy moving@p into gone@p. The copy stays, as a
// tombstone, so that its version keeps growing if the lock ever comes
// back.
func (m *mover) disown(ctx context.Context, mv layout.Move) error {
	ws, err := m.pool.Get(ctx, mv.From)
	if err != nil {
		return err
	}
	if err := syncRead(ctx, ws.Conn, layout.LocksDir); err != nil {
		return err
	}
	for {
		rec, st, err := readCopy(ctx, ws, mv.Lock)
		if err != nil {
			return err
		}
		if rec.Placement != mv.Placement || rec.State != layout.Moving {
			return nil // done before an interruption
		}
		rec.State = layout.Gone
		_, err = ws.Conn.Set(ctx, layout.WorkerLockPath(mv.Lock), layout.Marshal(rec), st.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zkproto.ErrBadVersion) && !isConnLoss(err) {
			return err
		}
	}
}
