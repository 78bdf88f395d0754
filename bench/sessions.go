package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"time"
)

// Phases of the sessions benchmark (SessionsConfig.Phases).
const (
	PhaseIdle   = "idle"   // many sessions kept alive by pings: the servers' CPU and log writes
	PhaseExpire = "expire" // sessions with ephemerals dropped while an open-loop writer runs
	PhaseWatch  = "watch"  // many watchers of one znode: notification latency after each change
)

// SessionsConfig describes a run of the sessions benchmark: many sessions
// and watches, the cost of keeping them and of losing them.
type SessionsConfig struct {
	// Servers are the host:port client addresses; session i connects to
	// Servers[i mod len(Servers)].
	Servers []string
	// Phases are the phases to run, in this order: PhaseIdle,
	// PhaseExpire, PhaseWatch.
	Phases []string
	// Timeout is the session timeout every session asks for; each pings
	// when it has sent nothing for a third of the negotiated one.
	Timeout time.Duration
	// Root is the znode under which the benchmark works.
	Root string

	// Sessions is the idle phase's session count; Settle how long they
	// stay connected before the Hold window in which the servers' CPU and
	// log writes are measured.
	Sessions     int
	Settle, Hold time.Duration
	// PIDs, MetricsURLs and DataDirs name, in the order of Servers, each
	// server's process (CPU from /proc), metrics page (LogBytesMetric)
	// and data directory (growth of the log files under it); any may be
	// empty.
	PIDs        []int
	MetricsURLs []string
	DataDirs    []string

	// ExpireSessions sessions create Ephemerals ephemeral znodes each and
	// are dropped, while WriterSessions other sessions write ValueSize
	// bytes at Rate setData per second (open loop), starting WriterLead
	// before the drop.
	ExpireSessions int
	Ephemerals     int
	Rate           float64
	ValueSize      int
	WriterSessions int
	WriterLead     time.Duration

	// Watchers sessions watch one znode that another session changes
	// Rounds times; RoundTimeout bounds the wait for a round's
	// notifications.
	Watchers     int
	Rounds       int
	RoundTimeout time.Duration

	// Source is the first local address sessions connect from (each
	// PerSource sessions take the next one), so that no source address
	// runs out of ephemeral ports; "" connects from any address. The
	// default ("auto") is 127.0.0.2 when every server is on loopback.
	Source    string
	PerSource int
	// PerProcess is the most sessions one process holds: a phase with
	// more runs them in worker processes that Worker starts (each running
	// ServeSessionsWorker); nil Worker holds them all in this process.
	PerProcess int
	Worker     func() *exec.Cmd
	// MaxPerServer caps each phase's sessions at MaxPerServer per server
	// (what a server process's open-file limit lets it hold); the result
	// says when it did.
	MaxPerServer int
	// Concurrency is the sessions each holder opens (and the requests it
	// has in flight) at once.
	Concurrency int
	// OpenTimeout is how long a session may take to open: a refused
	// handshake is tried again on the next server, after a pause that
	// grows (backoff), until it has passed; only a session that no
	// server took by then fails the phase. The coordinator's session
	// has as long to come back after its connection is lost; the
	// open-loop writer's sessions try to come back until the phase ends.
	OpenTimeout time.Duration
	// Progress, if set, receives a line now and then.
	Progress func(string)
}

// SessionsResult is what a run measured, by phase.
type SessionsResult struct {
	Servers []string      `json:"servers"`
	Idle    *IdleResult   `json:"idle,omitempty"`
	Expire  *ExpireResult `json:"expire,omitempty"`
	Watch   *WatchResult  `json:"watch,omitempty"`
}

// Connected describes how a phase's sessions were opened.
type Connected struct {
	// Requested is the sessions asked for, Sessions those opened (fewer
	// when MaxPerServer capped them: CapNote says so).
	Requested int    `json:"requested"`
	Sessions  int    `json:"sessions"`
	CapNote   string `json:"cap_note,omitempty"`
	Processes int    `json:"processes"`
	// Seconds is how long opening them took; Retries counts handshakes
	// tried again after a refusal (SessionsConfig.OpenTimeout).
	Seconds float64 `json:"seconds"`
	Retries int     `json:"retries"`
	// TimeoutMs is the negotiated session timeout (the smallest).
	TimeoutMs int64 `json:"timeout_ms"`
}

// LostSessions counts a phase's sessions whose connection ended without
// the benchmark closing it (a loaded server closed it, say): the phase
// reports them and goes on without them.
type LostSessions struct {
	// Lost is how many there were.
	Lost int `json:"lost"`
	// LostError is why the first connection ended.
	LostError string `json:"lost_error,omitempty"`
}

// lostOf adds up the holders' lost sessions.
func lostOf(reps []holderReply) LostSessions {
	return LostSessions{Lost: sum(reps, func(r holderReply) int { return r.Lost }),
		LostError: firstText(reps, func(r holderReply) string { return r.LostError })}
}

// defaults fills what the configuration leaves out.
func (cfg *SessionsConfig) defaults() error {
	if len(cfg.Servers) == 0 {
		return errors.New("bench: sessions needs a server")
	}
	if len(cfg.Phases) == 0 {
		cfg.Phases = []string{PhaseIdle, PhaseExpire, PhaseWatch}
	}
	for _, p := range cfg.Phases {
		if p != PhaseIdle && p != PhaseExpire && p != PhaseWatch {
			return fmt.Errorf("bench: unknown phase %q (%s, %s or %s)", p, PhaseIdle, PhaseExpire, PhaseWatch)
		}
	}
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	setD := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	setD(&cfg.Timeout, 10*time.Second)
	setD(&cfg.Hold, 30*time.Second)
	setD(&cfg.WriterLead, 2*time.Second)
	setD(&cfg.RoundTimeout, 10*time.Second)
	setD(&cfg.OpenTimeout, DefaultOpenTimeout)
	set(&cfg.Sessions, 100000)
	set(&cfg.ExpireSessions, 10000)
	set(&cfg.Ephemerals, 10)
	set(&cfg.ValueSize, 1024)
	set(&cfg.WriterSessions, 8)
	set(&cfg.Watchers, 10000)
	set(&cfg.Rounds, 10)
	set(&cfg.PerSource, 10000)
	set(&cfg.PerProcess, 15000)
	set(&cfg.MaxPerServer, 19000)
	set(&cfg.Concurrency, 64)
	if cfg.Rate <= 0 {
		cfg.Rate = 5000
	}
	if cfg.Root == "" {
		cfg.Root = "/giraffe-sessions"
	}
	if cfg.Source == "auto" {
		cfg.Source = ""
		if allLoopback(cfg.Servers) {
			cfg.Source = "127.0.0.2"
		}
	}
	for name, n := range map[string]int{"pids": len(cfg.PIDs), "metrics": len(cfg.MetricsURLs), "data dirs": len(cfg.DataDirs)} {
		if n != 0 && n != len(cfg.Servers) {
			return fmt.Errorf("bench: %d %s for %d servers (one each, in the servers' order)", n, name, len(cfg.Servers))
		}
	}
	return nil
}

// allLoopback reports whether every server's host is a loopback address.
func allLoopback(servers []string) bool {
	for _, s := range servers {
		host, _, err := net.SplitHostPort(s)
		if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// RunSessions runs the configured phases one after the other.
func RunSessions(ctx context.Context, cfg SessionsConfig) (*SessionsResult, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &SessionsResult{Servers: cfg.Servers}
	for _, p := range cfg.Phases {
		var err error
		switch p {
		case PhaseIdle:
			res.Idle, err = runIdle(ctx, cfg)
		case PhaseExpire:
			res.Expire, err = runExpire(ctx, cfg)
		case PhaseWatch:
			res.Watch, err = runWatch(ctx, cfg)
		}
		if err != nil {
			return res, fmt.Errorf("bench: sessions %s: %w", p, err)
		}
	}
	return res, nil
}

// progress reports a line, if the configuration wants them.
func (cfg *SessionsConfig) progress(format string, args ...any) {
	if cfg.Progress != nil {
		cfg.Progress(fmt.Sprintf(format, args...))
	}
}

// openChunk is how many sessions a holder opens per operation, so that
// the coordinator can report progress.
const openChunk = 2000

// openSessions opens n sessions (capped at MaxPerServer per server) in a
// new pool of holders, spread over the servers, and starts pinging them.
func openSessions(cfg SessionsConfig, n int, what string) (pool, *Connected, error) {
	c := &Connected{Requested: n, Sessions: n}
	if limit := cfg.MaxPerServer * len(cfg.Servers); n > limit {
		c.Sessions = limit
		c.CapNote = fmt.Sprintf("capped at %d sessions (%d servers x %d, what one server process can hold under its open-file limit)",
			limit, len(cfg.Servers), cfg.MaxPerServer)
		cfg.progress("%s: %s", what, c.CapNote)
	}
	p, err := newPool(c.Sessions, cfg.PerProcess, cfg.Worker)
	if err != nil {
		return nil, nil, err
	}
	c.Processes = len(p)
	start := time.Now()
	type share struct{ next, end int }
	shares := make([]share, len(p))
	for j := range p {
		first, count := p.share(j, c.Sessions)
		shares[j] = share{first, first + count}
	}
	reported := 0
	for {
		ops := make([]holderOp, len(p))
		active := false
		for j := range p {
			sh := &shares[j]
			k := min(openChunk, sh.end-sh.next)
			ops[j] = holderOp{Op: opOpen, Servers: cfg.Servers, First: sh.next, Count: k, TimeoutMs: cfg.Timeout.Milliseconds(),
				OpenTimeoutMs: cfg.OpenTimeout.Milliseconds(), Source: cfg.Source, PerSource: cfg.PerSource, Concurrency: cfg.Concurrency}
			sh.next += k
			active = active || k > 0
		}
		if !active {
			break
		}
		reps, err := p.all(func(j int) holderOp { return ops[j] })
		if err != nil {
			p.stop()
			return nil, nil, err
		}
		for _, rep := range reps {
			c.Retries += rep.Retries
			if rep.Failed > 0 {
				p.stop()
				return nil, nil, fmt.Errorf("%d sessions could not be opened; the first: %s", rep.Failed, rep.FirstError)
			}
			if rep.MinTimeoutMs > 0 && (c.TimeoutMs == 0 || rep.MinTimeoutMs < c.TimeoutMs) {
				c.TimeoutMs = rep.MinTimeoutMs
			}
		}
		opened := sum(reps, func(r holderReply) int { return r.Held })
		if opened*10/c.Sessions > reported {
			reported = opened * 10 / c.Sessions
			cfg.progress("%s: %d of %d sessions open", what, opened, c.Sessions)
		}
	}
	c.Seconds = time.Since(start).Seconds()
	return p, c, nil
}

// closeSessions closes every session of p (closeSession) and stops its
// holders.
func closeSessions(cfg SessionsConfig, p pool) error {
	_, err := p.all(func(int) holderOp { return holderOp{Op: opClose, Concurrency: cfg.Concurrency} })
	p.stop()
	return err
}

// sum adds f of every reply.
func sum(reps []holderReply, f func(holderReply) int) int {
	n := 0
	for _, r := range reps {
		n += f(r)
	}
	return n
}

// firstText returns the first non-empty f of the replies.
func firstText(reps []holderReply, f func(holderReply) string) string {
	for _, r := range reps {
		if t := f(r); t != "" {
			return t
		}
	}
	return ""
}

// clientPIDs are this process and the holders' processes, once each.
func clientPIDs(p pool) []int {
	pids := append([]int{os.Getpid()}, p.pids()...)
	slices.Sort(pids)
	return slices.Compact(pids)
}
