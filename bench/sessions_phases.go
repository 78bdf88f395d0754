package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// ExpireResult is what the expire phase measured: how the servers expire
// many sessions holding ephemerals, and what that does to the latency of
// writes meanwhile.
type ExpireResult struct {
	Connected
	// Parent is the znode the ephemerals were created under; Ephemerals
	// how many each session created, Created how many the sessions that
	// created all theirs did.
	Parent     string `json:"parent"`
	Ephemerals int    `json:"ephemerals_per_session"`
	Created    int    `json:"created"`
	// LostSessions are the sessions whose connection ended before the
	// drop: their ephemerals expire before or with the dropped ones, and
	// AtDrop, the parent's children as the drop began, counts those still
	// there (without lost sessions, AtDrop is Created).
	LostSessions
	AtDrop int `json:"at_drop"`
	// DropSeconds is how long closing every connection took; from the
	// start of the drop, FirstGoneSeconds is the time until the parent
	// had fewer than AtDrop children and ExpirySeconds until it had none
	// left, as the coordinator's session (on the first server that took
	// it) saw it.
	DropSeconds      float64 `json:"drop_seconds"`
	FirstGoneSeconds float64 `json:"first_gone_seconds"`
	ExpirySeconds    float64 `json:"expiry_seconds"`
	// Writer is the open-loop writer's requests due from the drop until
	// the last ephemeral was gone; its sessions whose connection is lost
	// reconnect (Result.Reconnects), the requests lost with it counting
	// as errors.
	Writer *Result `json:"writer"`
	// CoordinatorReconnects counts the connections of the coordinator's
	// own session that were lost and opened again.
	CoordinatorReconnects int `json:"coordinator_reconnects"`
}

// WatchResult is what the watch phase measured: how long after a change
// its watchers hear of it.
type WatchResult struct {
	Connected
	Path   string `json:"path"`
	Rounds int    `json:"rounds"`
	// Expected is the notifications due (one a round to every watcher
	// still connected: sessions x rounds when none is lost), Notified
	// those that came, Missed those that did not within RoundTimeout.
	Expected int `json:"expected"`
	Notified int `json:"notified"`
	Missed   int `json:"missed"`
	// LostSessions are the watchers whose connection ended during the
	// phase; a round does not wait for them.
	LostSessions
	// BeforeReply counts notifications that arrived before the writer had
	// the reply to its setData (a watcher's server may apply the change
	// before the writer's answers); they count as 0 ms.
	BeforeReply int `json:"before_reply"`
	// Unexpected counts other notifications, second ones in a round and
	// watches that could not be set again (UnexpectedText: the first).
	Unexpected     int    `json:"unexpected"`
	UnexpectedText string `json:"unexpected_text,omitempty"`
	// Latency is from the setData's reply at the writer to each
	// notification's arrival at its watcher; FromSend from the setData's
	// sending, which no notification can precede.
	Latency  Latencies `json:"latency_ms"`
	FromSend Latencies `json:"from_send_ms"`
	// RoundLastMs is, per round, the time from the setData's reply to the
	// last notification; WriteMs the setData's own latency.
	RoundLastMs []float64 `json:"round_last_ms"`
	WriteMs     []float64 `json:"write_ms"`
	// CoordinatorReconnects counts the connections of the coordinator's
	// own session that were lost and opened again (outside a round: a
	// round whose setData loses its connection fails the phase, as the
	// setData's reply is what its notifications are timed from).
	CoordinatorReconnects int `json:"coordinator_reconnects"`
}

// expiryPoll is how often the expire phase counts the parent's children.
const expiryPoll = 10 * time.Millisecond

// runExpire: cfg.ExpireSessions sessions create cfg.Ephemerals ephemerals
// each under a new parent; an open-loop writer starts; the sessions'
// connections are dropped, and the writer's latency is measured until the
// servers have expired every session and so deleted every ephemeral.
func runExpire(ctx context.Context, cfg SessionsConfig) (*ExpireResult, error) {
	ctl, err := openCtl(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	res := &ExpireResult{Parent: fmt.Sprintf("%s/expire-%d-%d", cfg.Root, os.Getpid(), time.Now().UnixMilli()), Ephemerals: cfg.Ephemerals}
	defer func() { res.CoordinatorReconnects = ctl.Reconnects }()
	if err := ctl.createNodes(ctx, []string{cfg.Root, res.Parent}); err != nil {
		return nil, err
	}
	p, c, err := openSessions(cfg, cfg.ExpireSessions, PhaseExpire)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	res.Connected = *c
	if err := res.createEphemerals(ctx, cfg, p, ctl); err != nil {
		return nil, err
	}
	cfg.progress("expire: %d sessions hold %d ephemerals; writing at %.0f/s, dropping them in %v",
		c.Sessions-res.Lost, res.Created, cfg.Rate, cfg.WriterLead)

	var windowErr error
	window := func(ctx context.Context, open, close func()) {
		windowErr = res.dropAndWait(ctx, cfg, p, ctl, open, close)
	}
	res.Writer, err = Run(ctx, Config{Servers: cfg.Servers, Workload: Write, Sessions: cfg.WriterSessions, ValueSize: cfg.ValueSize,
		Root: cfg.Root + "/load", Rate: cfg.Rate, Window: window, OpenTimeout: cfg.OpenTimeout})
	if err == nil {
		err = windowErr
	}
	if err != nil {
		return res, err
	}
	cfg.progress("expire: every ephemeral gone %.2fs after the drop", res.ExpirySeconds)
	err = ctl.retry(ctx, func(s *session) error {
		code, _, err := call(s, zkproto.OpDelete, &zkproto.DeleteRequest{Path: res.Parent, Version: -1}, nil)
		if err == nil && code != zkproto.OK && code != zkproto.ErrNoNode { // NONODE: deleted before a lost reply
			err = code
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("deleting %s: %w", res.Parent, err)
	}
	return res, nil
}

// createEphemerals has every session create its ephemerals, then waits
// until the coordinator's server has them all. Sessions lost meanwhile
// are counted, not fatal; an error answered to a create is.
func (res *ExpireResult) createEphemerals(ctx context.Context, cfg SessionsConfig, p pool, ctl *ctlSession) error {
	reps, err := p.all(func(int) holderOp {
		return holderOp{Op: opEphemerals, Path: res.Parent, Ephemerals: cfg.Ephemerals, Concurrency: cfg.Concurrency}
	})
	if err != nil {
		return err
	}
	if n := sum(reps, func(r holderReply) int { return r.Errors }); n > 0 {
		return fmt.Errorf("%d sessions could not create their ephemerals; the first: %s", n,
			firstText(reps, func(r holderReply) string { return r.ErrorText }))
	}
	res.Created = sum(reps, func(r holderReply) int { return r.Done }) * cfg.Ephemerals
	if lost := lostOf(reps); lost.Lost > 0 {
		// Some of a lost session's creates may have been applied, and
		// its ephemerals go when it expires: the count is not known in
		// advance. A sync brings the coordinator's server up to date.
		cfg.progress("expire: %d sessions lost while creating their ephemerals (the first: %s)", lost.Lost, lost.LostError)
		return ctl.retry(ctx, func(s *session) error {
			code, _, err := call(s, zkproto.OpSync, &zkproto.SyncRequest{Path: res.Parent}, nil)
			if err == nil && code != zkproto.OK {
				err = fmt.Errorf("sync %s: %w", res.Parent, code)
			}
			return err
		})
	}
	// The coordinator's server may not have applied the last creates yet.
	for deadline := time.Now().Add(ctlTimeout); ; {
		n, err := ctl.numChildren(ctx, res.Parent)
		if err != nil {
			return err
		}
		if n == res.Created {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s has %d children, %d created", res.Parent, n, res.Created)
		}
		time.Sleep(expiryPoll)
	}
}

// dropAndWait is the writer's measured window (Config.Window): after
// WriterLead it opens the window, drops every connection, and closes the
// window once the parent has no child left.
func (res *ExpireResult) dropAndWait(ctx context.Context, cfg SessionsConfig, p pool, ctl *ctlSession, open, close func()) error {
	if err := sleepCtx(ctx, cfg.WriterLead); err != nil {
		return err
	}
	// Status, not the drop's reply: a connection the drop ends is not lost.
	reps, err := p.all(func(int) holderOp { return holderOp{Op: opStatus} })
	if err != nil {
		return err
	}
	res.LostSessions = lostOf(reps)
	res.AtDrop = res.Created
	if res.Lost > 0 {
		if res.AtDrop, err = ctl.numChildren(ctx, res.Parent); err != nil {
			return err
		}
	}
	open()
	start := time.Now()
	if _, err := p.all(func(int) holderOp { return holderOp{Op: opDrop} }); err != nil {
		return err
	}
	res.DropSeconds = time.Since(start).Seconds()
	deadline := start.Add(3*cfg.Timeout + 30*time.Second)
	for {
		n, err := ctl.numChildren(ctx, res.Parent)
		if err != nil {
			return err
		}
		if n < res.AtDrop && res.FirstGoneSeconds == 0 {
			res.FirstGoneSeconds = time.Since(start).Seconds()
		}
		if n == 0 {
			res.ExpirySeconds = time.Since(start).Seconds()
			close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d ephemerals still there %v after the drop", n, res.AtDrop, time.Since(start).Round(time.Second))
		}
		if err := sleepCtx(ctx, expiryPoll); err != nil {
			return err
		}
	}
}

// runWatch: cfg.Watchers sessions set a data watch on one znode; the
// coordinator's session sets its data cfg.Rounds times, and each time
// every watcher's notification is timed from the setData's reply.
func runWatch(ctx context.Context, cfg SessionsConfig) (*WatchResult, error) {
	ctl, err := openCtl(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	res := &WatchResult{Path: cfg.Root + "/watched", Rounds: cfg.Rounds}
	defer func() { res.CoordinatorReconnects = ctl.Reconnects }()
	if err := ctl.createNodes(ctx, []string{cfg.Root, res.Path}); err != nil {
		return nil, err
	}
	p, c, err := openSessions(cfg, cfg.Watchers, PhaseWatch)
	if err != nil {
		return nil, err
	}
	res.Connected = *c
	measured := func() error {
		reps, err := p.all(func(int) holderOp { return holderOp{Op: opArm, Path: res.Path, Concurrency: cfg.Concurrency} })
		if err != nil {
			return err
		}
		if n := sum(reps, func(r holderReply) int { return r.Errors }); n > 0 {
			return fmt.Errorf("%d of %d watches could not be set; the first failure: %s", n, c.Sessions,
				firstText(reps, func(r holderReply) string { return r.ErrorText }))
		}
		cfg.progress("watch: %d watchers of %s; %d rounds", sum(reps, func(r holderReply) int { return r.Done }), res.Path, cfg.Rounds)
		hist, fromSend := NewHistogram(), NewHistogram()
		for r := 0; r < cfg.Rounds; r++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if ctl.s.lost() {
				if err := ctl.reconnect(ctx, ctl.s.stopErr); err != nil {
					return err
				}
			}
			if err := res.round(cfg, p, ctl.s, r, hist, fromSend); err != nil {
				return err
			}
		}
		res.Expected = res.Notified + res.Missed
		res.Latency, res.FromSend = LatenciesOf(hist), LatenciesOf(fromSend)
		reps, err = p.all(func(int) holderOp { return holderOp{Op: opStatus} })
		res.LostSessions = lostOf(reps)
		return err
	}()
	if err := closeSessions(cfg, p); err != nil && measured == nil {
		measured = fmt.Errorf("closing the sessions: %w", err)
	}
	return res, measured
}

// round runs watch round r: the change, then every notification of it.
func (res *WatchResult) round(cfg SessionsConfig, p pool, ctl *session, r int, hist, fromSend *hdrhistogram.Histogram) error {
	if _, err := p.all(func(int) holderOp { return holderOp{Op: opBegin, Round: r} }); err != nil {
		return err
	}
	sent := time.Now()
	code, replied, err := call(ctl, zkproto.OpSetData,
		&zkproto.SetDataRequest{Path: res.Path, Data: binary.BigEndian.AppendUint64(nil, uint64(r)), Version: -1}, nil)
	if err == nil && code != zkproto.OK {
		err = fmt.Errorf("setData %s: %v", res.Path, code)
	}
	if err != nil {
		// Lost with its connection, the setData may or may not have
		// been applied, and its notifications have no reply to be timed
		// from: the round cannot be measured.
		return fmt.Errorf("round %d, the coordinator's setData: %w", r, err)
	}
	res.WriteMs = append(res.WriteMs, float64(replied.Sub(sent).Microseconds())/1000)
	reps, err := p.all(func(int) holderOp {
		return holderOp{Op: opWait, Round: r, WaitMs: cfg.RoundTimeout.Milliseconds()}
	})
	if err != nil {
		return err
	}
	t0 := replied.UnixNano()
	var last int64
	for _, rep := range reps {
		res.Unexpected += rep.Errors
		if res.UnexpectedText == "" {
			res.UnexpectedText = rep.ErrorText
		}
		for _, at := range rep.Arrivals {
			switch {
			case at < 0: // lost: not due
				continue
			case at == 0:
				res.Missed++
				continue
			}
			res.Notified++
			Record(fromSend, time.Duration(at-sent.UnixNano()))
			d := at - t0
			if d < 0 {
				res.BeforeReply++
				d = 0
			}
			last = max(last, d)
			Record(hist, time.Duration(d))
		}
	}
	res.RoundLastMs = append(res.RoundLastMs, float64(last)/1e6)
	return nil
}
