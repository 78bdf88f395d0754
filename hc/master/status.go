package master

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/recipes"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// ClusterStatus is one worker ensemble in Status.
type ClusterStatus struct {
	ID      string              `json:"id"`
	Connect string              `json:"connect"`
	State   layout.ClusterState `json:"state"`
	// Locks is the worker's lock count: the locks the master places
	// there (a moving lock counts at its source until the move commits).
	Locks int `json:"locks"`
}

// Status summarizes the service as the master records it.
type Status struct {
	// Master is the master's connect string (filled in by the caller).
	Master string `json:"master"`
	// Daemon names the elected daemon (filled in by the caller, from
	// Leader).
	Daemon   string          `json:"daemon,omitempty"`
	Clusters []ClusterStatus `json:"clusters"`
	// Moving counts the moves in progress, Recalcitrant those of them
	// that wait for a holder to let go.
	Moving       int           `json:"moving"`
	Recalcitrant int           `json:"recalcitrant"`
	Moves        []layout.Move `json:"moves,omitempty"`
}

// ReadStatus reads the registry, the lock counts and the moves in
// progress from the master, after a sync: the answer includes every
// change any session saw applied before the call.
func ReadStatus(ctx context.Context, conn *client.Conn) (Status, error) {
	if err := syncRead(ctx, conn, layout.Root); err != nil {
		return Status{}, err
	}
	regs, err := clusters(ctx, conn)
	if err != nil {
		return Status{}, err
	}
	var st Status
	for id, r := range regs {
		pst, err := conn.Exists(ctx, layout.PlacementPath(id))
		if err != nil {
			return Status{}, err
		}
		n := 0
		if pst != nil {
			n = int(pst.NumChildren)
		}
		st.Clusters = append(st.Clusters, ClusterStatus{ID: id, Connect: r.Connect, State: r.State, Locks: n})
	}
	slices.SortFunc(st.Clusters, func(a, b ClusterStatus) int { return compareIDs(a.ID, b.ID) })
	names, err := children(ctx, conn, layout.MovesDir)
	if err != nil {
		return Status{}, err
	}
	slices.Sort(names)
	for _, n := range names {
		var mv layout.Move
		if _, err := getRecord(ctx, conn, layout.MovesDir+"/"+n, &mv); err != nil {
			if errors.Is(err, zkproto.ErrNoNode) {
				continue
			}
			return Status{}, err
		}
		st.Moves = append(st.Moves, mv)
		if mv.Phase == layout.Recalcitrant {
			st.Recalcitrant++
		}
	}
	st.Moving = len(st.Moves)
	return st, nil
}

// Leader returns the name of the elected daemon, "" when none runs.
func Leader(ctx context.Context, conn *client.Conn) (string, error) {
	names, _, err := recipes.LockContenders(ctx, conn, layout.ElectionPath)
	if err != nil || len(names) == 0 {
		return "", err
	}
	return names[0], nil
}

// compareIDs orders cluster ids shortest first, then alphabetically, so
// that w2 comes before w10.
func compareIDs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

// Audit compares the master's maps with every worker's copies and
// returns what disagrees, nothing when the service is consistent and at
// rest: every lock of the master is enabled on exactly one worker, the one
// its record names, with the record's copy number; it is counted under
// that worker and no other; no enabled copy is unknown to the master; no
// move or creation is in progress. It reads the workers through sessions
// of its own, closed before it returns.
func Audit(ctx context.Context, conn *client.Conn, opts ...client.Option) ([]string, error) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if err := syncRead(ctx, conn, layout.Root); err != nil {
		return nil, err
	}
	regs, err := clusters(ctx, conn)
	if err != nil {
		return nil, err
	}
	placedAt := map[string][]string{} // lock → clusters counting it
	for id := range regs {
		names, err := children(ctx, conn, layout.PlacementPath(id))
		if err != nil {
			return nil, err
		}
		locks, err := decodeNames(names)
		if err != nil {
			return nil, err
		}
		for _, l := range locks {
			placedAt[l] = append(placedAt[l], id)
		}
	}
	locks := make([]string, 0, len(placedAt))
	for l := range placedAt {
		locks = append(locks, l)
	}
	slices.Sort(locks)
	recs, err := lockRecords(ctx, conn, locks)
	if err != nil {
		return nil, err
	}
	moves, err := children(ctx, conn, layout.MovesDir)
	if err != nil {
		return nil, err
	}
	for _, n := range moves {
		add("move in progress: %s", n)
	}
	enabled := map[string][]string{} // lock → "cid@placement" of its enabled copies
	pool := workers.New(conn, opts...)
	defer pool.Close()
	ids := make([]string, 0, len(regs))
	for id := range regs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ws, err := pool.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := syncRead(ctx, ws.Conn, layout.LocksDir); err != nil {
			return nil, err
		}
		names, err := children(ctx, ws.Conn, layout.LocksDir)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			l, err := layout.Decode(n)
			if err != nil {
				return nil, err
			}
			rec, st, err := readCopy(ctx, ws, l)
			if err != nil {
				return nil, err
			}
			switch rec.State {
			case layout.Enabled:
				enabled[l] = append(enabled[l], fmt.Sprintf("%s@%d", id, rec.Placement))
			case layout.Moving:
				add("%s: copy on %s is moving", l, id)
			}
			if rec.State != layout.Enabled && st.NumChildren > 0 {
				add("%s: copy on %s is %s and has a holder", l, id, rec.State)
			}
		}
	}
	for _, l := range locks {
		r, ok := recs[l]
		switch {
		case !ok:
			add("%s: counted on %v but has no record", l, placedAt[l])
			continue
		case r.Creating:
			add("%s: still being created", l)
		}
		if want := []string{r.Cluster}; !slices.Equal(placedAt[l], want) {
			add("%s: counted on %v, record says %s", l, placedAt[l], r.Cluster)
		}
		if want := []string{fmt.Sprintf("%s@%d", r.Cluster, r.Placement)}; !r.Creating && !slices.Equal(enabled[l], want) {
			add("%s: enabled copies %v, record says %v", l, enabled[l], want)
		}
		delete(enabled, l)
	}
	for l, where := range enabled {
		add("%s: enabled on %v but unknown to the master", l, where)
	}
	slices.Sort(problems)
	return problems, nil
}
