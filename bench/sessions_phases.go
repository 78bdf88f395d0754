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
	// how many each session created, Created how many were in all.
	Parent     string `json:"parent"`
	Ephemerals int    `json:"ephemerals_per_session"`
	Created    int    `json:"created"`
	// DropSeconds is how long closing every connection took; from the
	// start of the drop, FirstGoneSeconds is the time until the parent
	// had lost its first child and ExpirySeconds until it had none left,
	// as a session on the first server saw it.
	DropSeconds      float64 `json:"drop_seconds"`
	FirstGoneSeconds float64 `json:"first_gone_seconds"`
	ExpirySeconds    float64 `json:"expiry_seconds"`
	// Writer is the open-loop writer's requests due from the drop until
	// the last ephemeral was gone.
	Writer *Result `json:"writer"`
}

// WatchResult is what the watch phase measured: how long after a change
// its watchers hear of it.
type WatchResult struct {
	Connected
	Path   string `json:"path"`
	Rounds int    `json:"rounds"`
	// Expected is the notifications due (sessions x rounds), Notified
	// those that came, Missed those that did not within RoundTimeout.
	Expected int `json:"expected"`
	Notified int `json:"notified"`
	Missed   int `json:"missed"`
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
}

// ctlTimeout bounds one request of the coordinator's own session.
const ctlTimeout = 30 * time.Second

// call sends one request on s and waits for its reply; done, if not nil,
// sees the reply's body (valid during the call only). It returns the
// reply's code and when the reply arrived.
func call(s *session, op zkproto.OpCode, req zkproto.Record, done func([]byte)) (zkproto.Code, time.Time, error) {
	type reply struct {
		code zkproto.Code
		at   time.Time
	}
	got := make(chan reply, 1)
	err := s.send(op, req, func(code zkproto.Code, body []byte, _ time.Time) {
		at := time.Now()
		if done != nil && code == zkproto.OK {
			done(body)
		}
		got <- reply{code, at}
	})
	if err == nil {
		err = s.flush()
	}
	if err != nil {
		return 0, time.Time{}, err
	}
	select {
	case r := <-got:
		return r.code, r.at, nil
	case err := <-s.reader():
		return 0, time.Time{}, err
	case <-time.After(ctlTimeout):
		return 0, time.Time{}, fmt.Errorf("%v: no reply within %v", op, ctlTimeout)
	}
}

// numChildren returns the number of children of path.
func numChildren(s *session, path string) (int, error) {
	var st zkproto.Stat
	code, _, err := call(s, zkproto.OpExists, &zkproto.ExistsRequest{Path: path}, func(b []byte) {
		st.Decode(zkproto.NewDecoder(b))
	})
	if err == nil && code != zkproto.OK {
		err = fmt.Errorf("exists %s: %v", path, code)
	}
	return int(st.NumChildren), err
}

// expiryPoll is how often the expire phase counts the parent's children.
const expiryPoll = 10 * time.Millisecond

// runExpire: cfg.ExpireSessions sessions create cfg.Ephemerals ephemerals
// each under a new parent; an open-loop writer starts; the sessions'
// connections are dropped, and the writer's latency is measured until the
// servers have expired every session and so deleted every ephemeral.
func runExpire(ctx context.Context, cfg SessionsConfig) (*ExpireResult, error) {
	ctl, err := dial(cfg.Servers[0], ctlTimeout, 64)
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	defer ctl.keepAlive()()
	res := &ExpireResult{Parent: fmt.Sprintf("%s/expire-%d-%d", cfg.Root, os.Getpid(), time.Now().UnixMilli()), Ephemerals: cfg.Ephemerals}
	if err := createNodes(ctl, []string{cfg.Root, res.Parent}, nil); err != nil {
		return nil, err
	}
	p, c, err := openSessions(cfg, cfg.ExpireSessions, PhaseExpire)
	if err != nil {
		return nil, err
	}
	defer p.stop()
	res.Connected = *c
	reps, err := p.all(func(int) holderOp {
		return holderOp{Op: opEphemerals, Path: res.Parent, Ephemerals: cfg.Ephemerals, Concurrency: cfg.Concurrency}
	})
	if err != nil {
		return nil, err
	}
	if n := sum(reps, func(r holderReply) int { return r.Errors }); n > 0 {
		return nil, fmt.Errorf("%d sessions could not create their ephemerals; the first: %s", n,
			firstText(reps, func(r holderReply) string { return r.ErrorText }))
	}
	res.Created = sum(reps, func(r holderReply) int { return r.Done }) * cfg.Ephemerals
	// The first server may not have applied the last creates yet.
	for deadline := time.Now().Add(ctlTimeout); ; {
		n, err := numChildren(ctl, res.Parent)
		if err != nil {
			return nil, err
		}
		if n == res.Created {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s has %d children, %d created", res.Parent, n, res.Created)
		}
		time.Sleep(expiryPoll)
	}
	cfg.progress("expire: %d sessions hold %d ephemerals; writing at %.0f/s, dropping them in %v",
		c.Sessions, res.Created, cfg.Rate, cfg.WriterLead)

	var windowErr error
	window := func(ctx context.Context, open, close func()) {
		windowErr = func() error {
			if err := sleepCtx(ctx, cfg.WriterLead); err != nil {
				return err
			}
			open()
			start := time.Now()
			if _, err := p.all(func(int) holderOp { return holderOp{Op: opDrop} }); err != nil {
				return err
			}
			res.DropSeconds = time.Since(start).Seconds()
			deadline := start.Add(3*cfg.Timeout + 30*time.Second)
			for {
				n, err := numChildren(ctl, res.Parent)
				if err != nil {
					return err
				}
				if n < res.Created && res.FirstGoneSeconds == 0 {
					res.FirstGoneSeconds = time.Since(start).Seconds()
				}
				if n == 0 {
					res.ExpirySeconds = time.Since(start).Seconds()
					close()
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%d of %d ephemerals still there %v after the drop", n, res.Created, time.Since(start).Round(time.Second))
				}
				if err := sleepCtx(ctx, expiryPoll); err != nil {
					return err
				}
			}
		}()
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
	code, _, err := call(ctl, zkproto.OpDelete, &zkproto.DeleteRequest{Path: res.Parent, Version: -1}, nil)
	if err == nil && code != zkproto.OK {
		err = code
	}
	if err != nil {
		return res, fmt.Errorf("deleting %s: %w", res.Parent, err)
	}
	return res, nil
}

// runWatch: cfg.Watchers sessions set a data watch on one znode; a
// session on the first server sets its data cfg.Rounds times, and each
// time every watcher's notification is timed from the setData's reply.
func runWatch(ctx context.Context, cfg SessionsConfig) (*WatchResult, error) {
	ctl, err := dial(cfg.Servers[0], ctlTimeout, 64)
	if err != nil {
		return nil, err
	}
	defer ctl.close()
	defer ctl.keepAlive()()
	res := &WatchResult{Path: cfg.Root + "/watched", Rounds: cfg.Rounds}
	if err := createNodes(ctl, []string{cfg.Root, res.Path}, nil); err != nil {
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
		if armed := sum(reps, func(r holderReply) int { return r.Done }); armed != c.Sessions {
			return fmt.Errorf("%d of %d watches set; the first failure: %s", armed, c.Sessions,
				firstText(reps, func(r holderReply) string { return r.ErrorText }))
		}
		cfg.progress("watch: %d watchers of %s; %d rounds", c.Sessions, res.Path, cfg.Rounds)
		hist, fromSend := NewHistogram(), NewHistogram()
		for r := 0; r < cfg.Rounds; r++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := res.round(cfg, p, ctl, r, hist, fromSend); err != nil {
				return err
			}
		}
		res.Expected = c.Sessions * cfg.Rounds
		res.Latency, res.FromSend = LatenciesOf(hist), LatenciesOf(fromSend)
		return nil
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
		return err
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
			if at == 0 {
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
