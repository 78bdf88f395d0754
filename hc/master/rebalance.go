package master

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/plan"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// maxPlanAttempts bounds the retries of a plan whose multi lost a race
// (a lock created, or a record changed, between its reads and its write).
const maxPlanAttempts = 5

// Rebalance plans moving part of worker from's locks to worker to, split
// by mode (package plan), and returns the locks it planned to move. If to
// is a standby it is recruited: made active by the same multi that
// records the moves, so that a crash leaves either both or neither. The
// domains that move whole are mapped to to in that multi as well, so
// their new locks follow them. Locks still being created on from are
// finished first; locks already moving stay out of the plan. The plan
// starts from a synced read of the master. The moves themselves are the
// daemon's to execute.
func Rebalance(ctx context.Context, conn *client.Conn, from, to string, mode plan.Mode) ([]string, error) {
	if from == to {
		return nil, fmt.Errorf("hc: rebalance from %s to itself", from)
	}
	for attempt := 1; ; attempt++ {
		moved, err := rebalanceOnce(ctx, conn, from, to, mode)
		if err == nil || attempt == maxPlanAttempts || !planRaced(err) {
			return moved, err
		}
		if err := sleep(ctx, retryPause); err != nil {
			return nil, err
		}
	}
}

// planRaced reports whether a planning multi failed because the master
// changed between its reads and its write, or because its reply was lost.
func planRaced(err error) bool {
	return errors.Is(err, zkproto.ErrBadVersion) || errors.Is(err, zkproto.ErrNodeExists) ||
		errors.Is(err, zkproto.ErrNoNode) || isConnLoss(err)
}

func rebalanceOnce(ctx context.Context, conn *client.Conn, from, to string, mode plan.Mode) ([]string, error) {
	if err := syncRead(ctx, conn, layout.Root); err != nil {
		return nil, err
	}
	regs, err := clusters(ctx, conn)
	if err != nil {
		return nil, err
	}
	if _, ok := regs[from]; !ok {
		return nil, fmt.Errorf("hc: no cluster %s", from)
	}
	dest, ok := regs[to]
	if !ok {
		return nil, fmt.Errorf("hc: no cluster %s", to)
	}
	candidates, recs, err := movable(ctx, conn, from)
	if err != nil {
		return nil, err
	}
	moved := plan.Split(candidates, mode)
	if len(moved) == 0 {
		return nil, nil
	}
	var ops []client.Op
	if dest.State != layout.Active {
		dest.State = layout.Active
		ops = append(ops, client.SetOp(layout.ClusterPath(to), layout.Marshal(dest.Cluster), dest.version))
	}
	for _, d := range plan.WholeDomains(moved, candidates) {
		var dom layout.Node
		st, err := getRecord(ctx, conn, layout.NamePath(d), &dom)
		if err != nil {
			return nil, err
		}
		if dom.Cluster == from {
			dom.Cluster = to
			ops = append(ops, client.SetOp(layout.NamePath(d), layout.Marshal(dom), st.Version))
		}
	}
	for _, l := range moved {
		ops = append(ops, moveOps(l, recs[l], to)...)
	}
	if _, err := conn.Multi(ctx, ops...); err != nil {
		return nil, err
	}
	return moved, nil
}

// movable lists the locks placed on worker from that a plan may move
// (not moving), with their records. Locks still being created there are
// finished first, so that a plan made while a lock is created keeps it
// with its domain.
func movable(ctx context.Context, conn *client.Conn, from string) ([]string, map[string]record, error) {
	if err := finishCreations(ctx, conn, from); err != nil {
		return nil, nil, err
	}
	names, err := children(ctx, conn, layout.PlacementPath(from))
	if err != nil {
		return nil, nil, err
	}
	locks, err := decodeNames(names)
	if err != nil {
		return nil, nil, err
	}
	moving, err := children(ctx, conn, layout.MovesDir)
	if err != nil {
		return nil, nil, err
	}
	busy := map[string]bool{}
	for _, n := range moving {
		busy[n] = true
	}
	recs, err := lockRecords(ctx, conn, locks)
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, l := range locks {
		r, ok := recs[l]
		if ok && r.Cluster == from && !r.Creating && !busy[layout.Encode(l)] {
			out = append(out, l)
		}
	}
	return out, recs, nil
}

// finishCreations finishes the creation of the locks placed on worker
// from whose records are still Creating.
func finishCreations(ctx context.Context, conn *client.Conn, from string) error {
	names, err := children(ctx, conn, layout.PlacementPath(from))
	if err != nil {
		return err
	}
	locks, err := decodeNames(names)
	if err != nil {
		return err
	}
	recs, err := lockRecords(ctx, conn, locks)
	if err != nil {
		return err
	}
	var pool *workers.Pool
	for _, l := range locks {
		r, ok := recs[l]
		if !ok || !r.Creating {
			continue
		}
		if pool == nil {
			pool = workers.New(conn)
			defer pool.Close()
		}
		if err := workers.FinishCreate(ctx, conn, pool, l, r.Node, r.version); err != nil {
			return err
		}
	}
	return nil
}

// moveOps records the intent to move lock l (whose record is r) to
// worker to: conditioned on the record's version, so that the move's
// source and placement number are the current ones.
func moveOps(l string, r record, to string) []client.Op {
	mv := layout.Move{Lock: l, From: r.Cluster, To: to, Placement: r.Placement, Phase: layout.Planned}
	return []client.Op{client.CheckOp(layout.NamePath(l), r.version),
		client.CreateOp(layout.MovePath(l), layout.Marshal(mv), client.Persistent, zkproto.OpenACLUnsafe)}
}

// MoveLocks plans moving the given locks to worker to (recruiting it if
// it is a standby) and returns those it planned: a lock already there,
// already moving or still being created is left out. Each lock's intent is
// its own multi, so one that loses a race does not hold up the others.
func MoveLocks(ctx context.Context, conn *client.Conn, locks []string, to string) ([]string, error) {
	if err := syncRead(ctx, conn, layout.Root); err != nil {
		return nil, err
	}
	regs, err := clusters(ctx, conn)
	if err != nil {
		return nil, err
	}
	dest, ok := regs[to]
	if !ok {
		return nil, fmt.Errorf("hc: no cluster %s", to)
	}
	if dest.State != layout.Active {
		dest.State = layout.Active
		if _, err := conn.Set(ctx, layout.ClusterPath(to), layout.Marshal(dest.Cluster), dest.version); err != nil {
			return nil, err
		}
	}
	recs, err := lockRecords(ctx, conn, locks)
	if err != nil {
		return nil, err
	}
	var planned []string
	for _, l := range locks {
		r, ok := recs[l]
		if !ok || r.Cluster == to || r.Creating {
			continue
		}
		_, err := conn.Multi(ctx, moveOps(l, r, to)...)
		switch {
		case err == nil:
			planned = append(planned, l)
		case planRaced(err):
			// Moving already, or changed since read: leave it.
		default:
			return planned, err
		}
	}
	slices.Sort(planned)
	return planned, nil
}
