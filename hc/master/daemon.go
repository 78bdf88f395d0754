package master

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/plan"
	"github.com/giraffe-coord/giraffe/recipes"
)

// Config configures the daemon.
type Config struct {
	// Master is the master ensemble's servers.
	Master []string
	// Name identifies this daemon in the election.
	Name string
	// Threshold is the lock count above which a worker is split: a
	// standby is recruited and part of the worker's locks move to it.
	// 0 disables recruitment (moves planned by others still run).
	Threshold int
	// Split is how an overloaded worker's locks are divided.
	Split plan.Mode
	// SessionOptions configure the daemon's sessions (master and
	// workers); a daemon that dies is replaced once its master session
	// has expired.
	SessionOptions []client.Option
	// Poll is how often lock counts are checked (default 200 ms).
	Poll time.Duration
	// MaxMoves bounds the moves executed at once (default 64).
	MaxMoves int
	// Log receives the daemon's events (default: none).
	Log *slog.Logger
	// AfterStep, if set, runs at every point of the move protocol
	// (Point); an error stops the daemon at once, as a crash there would.
	// It is the fault-injection point of the tests and of `giraffe hc
	// daemon --exit-at`.
	AfterStep func(Point) error
}

func (c *Config) defaults() {
	if c.Poll <= 0 {
		c.Poll = 200 * time.Millisecond
	}
	if c.MaxMoves <= 0 {
		c.MaxMoves = 64
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
}

// Run campaigns for leadership among the daemons of the master ensemble
// and, while elected, recruits workers and executes moves, until ctx ends
// (nil) or AfterStep stops it (ErrStopped). A lost master session ends the
// term; the daemon then campaigns again with a new session.
//
// The election only keeps daemons from doing the same work twice: every
// step is conditioned on versions, so an old leader still acting before it
// notices its session has ended cannot break the protocol.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	for ctx.Err() == nil {
		conn, err := client.Connect(ctx, cfg.Master, cfg.SessionOptions...)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			cfg.Log.Warn("hc daemon: connecting to the master", "err", err)
			sleep(ctx, time.Second)
			continue
		}
		err = campaign(ctx, cfg, conn)
		conn.Close()
		if errors.Is(err, ErrStopped) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			cfg.Log.Warn("hc daemon: term ended", "err", err)
			sleep(ctx, 100*time.Millisecond)
		}
	}
	return nil
}

// campaign waits to be elected on conn's session, then leads until the
// session ends or ctx does.
func campaign(ctx context.Context, cfg Config, conn *client.Conn) error {
	if err := Init(ctx, conn); err != nil {
		return err
	}
	el := recipes.NewQueueLock(conn, layout.ElectionPath, recipes.WithIdentifier([]byte(cfg.Name)))
	if err := el.Lock(ctx); err != nil {
		return err
	}
	cfg.Log.Info("hc daemon: elected", "name", cfg.Name)
	term, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for ev := range conn.SessionEvents() {
			if ev.State.Final() {
				break
			}
		}
		cancel()
	}()
	err := lead(term, cfg, conn)
	uctx, ucancel := context.WithTimeout(context.Background(), 2*time.Second)
	el.Unlock(uctx)
	ucancel()
	return err
}

// lead is one term: it starts an executor for every move recorded in the
// master (watching the moves directory), and checks the lock counts every
// Poll for a worker over the threshold.
func lead(ctx context.Context, cfg Config, conn *client.Conn) error {
	pool := workers.New(conn, cfg.SessionOptions...)
	defer pool.Close()
	m := &mover{master: conn, pool: pool, log: cfg.Log, afterStep: cfg.AfterStep}
	type result struct {
		lock string
		err  error
	}
	done := make(chan result)
	running := map[string]bool{}
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		for range len(running) {
			<-done
		}
	}()
	tick := time.NewTicker(cfg.Poll)
	defer tick.Stop()
	var movesChanged <-chan client.Event
	relist := true
	for {
		if relist || movesChanged == nil {
			names, _, ch, err := conn.ChildrenW(ctx, layout.MovesDir)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				cfg.Log.Warn("hc daemon: listing moves", "err", err)
			} else {
				movesChanged, relist = ch, false
				locks, err := decodeNames(names)
				if err != nil {
					return err
				}
				slices.Sort(locks)
				for _, l := range locks {
					if running[l] || len(running) >= cfg.MaxMoves {
						continue
					}
					running[l] = true
					go func() { done <- result{l, m.run(ctx, l)} }()
				}
			}
		}
		select {
		case <-movesChanged:
			movesChanged = nil
		case <-tick.C:
			if cfg.Threshold > 0 {
				if err := recruit(ctx, cfg, conn); err != nil && ctx.Err() == nil {
					cfg.Log.Warn("hc daemon: recruitment", "err", err)
				}
			}
		case r := <-done:
			delete(running, r.lock)
			relist = true
			switch {
			case errors.Is(r.err, ErrStopped):
				return r.err
			case r.err != nil && ctx.Err() == nil:
				cfg.Log.Warn("hc daemon: move", "lock", r.lock, "err", r.err)
				// Retried at the next relist; do not spin on a move that
				// keeps failing.
				sleep(ctx, 100*time.Millisecond)
			case r.err == nil:
				cfg.Log.Debug("hc daemon: moved", "lock", r.lock)
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// recruit splits the first active worker whose lock count, counting the
// moves in flight, exceeds the threshold: part of its locks move to the
// first standby, which becomes active.
func recruit(ctx context.Context, cfg Config, conn *client.Conn) error {
	st, err := ReadStatus(ctx, conn)
	if err != nil {
		return err
	}
	load := map[string]int{}
	for _, c := range st.Clusters {
		load[c.ID] = c.Locks
	}
	for _, mv := range st.Moves {
		if mv.Phase != layout.Committed { // committed moves are counted at To already
			load[mv.From]--
			load[mv.To]++
		}
	}
	var standby string
	for _, c := range st.Clusters {
		if c.State == layout.Standby {
			standby = c.ID
			break
		}
	}
	for _, c := range st.Clusters {
		if c.State != layout.Active || load[c.ID] <= cfg.Threshold {
			continue
		}
		if standby == "" {
			cfg.Log.Warn("hc daemon: worker over the threshold and no standby to recruit", "cluster", c.ID, "locks", load[c.ID])
			return nil
		}
		moved, err := Rebalance(ctx, conn, c.ID, standby, cfg.Split)
		if err != nil {
			return err
		}
		if len(moved) > 0 {
			cfg.Log.Info("hc daemon: recruited", "standby", standby, "from", c.ID, "locks", len(moved))
			return nil // one recruitment per round: the next sees the new counts
		}
	}
	return nil
}
