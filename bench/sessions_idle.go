package bench

import (
	"context"
	"fmt"
	"time"
)

// IdleResult is what the idle phase measured: the cost to the servers of
// sessions that only keep themselves alive.
type IdleResult struct {
	Connected
	// PingIntervalMs is how long a session waits after its last request
	// before it pings: a third of the negotiated timeout.
	PingIntervalMs float64 `json:"ping_interval_ms"`
	SettleSeconds  float64 `json:"settle_seconds"`
	// HoldSeconds is the measured window; Pings and Pongs the pings sent
	// and answered in it.
	HoldSeconds float64 `json:"hold_seconds"`
	Pings       int64   `json:"pings"`
	Pongs       int64   `json:"pongs"`
	// Alive is the sessions still connected at the window's end; Lost
	// the connections that ended on the servers' side since they were
	// opened.
	Alive int `json:"alive"`
	LostSessions
	// PerServer is each server's figures, in the order of Servers.
	PerServer []IdleServer `json:"per_server"`
	// ClientCPUPercent is the CPU the benchmark's own processes
	// (ClientPIDs: this one and its workers) used in the window, in
	// percent of one core.
	ClientCPUPercent float64 `json:"client_cpu_percent"`
	ClientPIDs       []int   `json:"client_pids"`
}

// IdleServer is one server's figures in the idle window. A figure the
// run had no means to measure is absent.
type IdleServer struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid,omitempty"`
	// CPUPercent is the process's user and system CPU time in the window,
	// in percent of one core.
	CPUPercent *float64 `json:"cpu_percent,omitempty"`
	// LogBytesPerSec is the growth of LogBytesMetric on the server's
	// metrics page over the window, per second.
	LogBytesPerSec *float64 `json:"log_bytes_per_sec,omitempty"`
	// LogFileBytesPerSec is the growth of the log files under the
	// server's data directory (logFilesWritten), per second.
	LogFileBytesPerSec *float64 `json:"log_file_bytes_per_sec,omitempty"`
	// Connections is the server's open client connections at the
	// window's end, as its mntr says (-1: it did not answer).
	Connections int `json:"connections"`
}

// idleSample is what the idle phase reads at each end of its window.
type idleSample struct {
	at        time.Time
	reps      []holderReply
	cpu       []time.Duration // per server (PIDs)
	clientCPU time.Duration
	logged    []float64 // per server (MetricsURLs)
	files     []int64   // per server (DataDirs)
}

// sampleIdle reads the holders' counters and the servers' CPU and logs.
func sampleIdle(cfg SessionsConfig, p pool) (idleSample, error) {
	var s idleSample
	var err error
	if s.reps, err = p.all(func(int) holderOp { return holderOp{Op: opStatus} }); err != nil {
		return s, err
	}
	s.at = time.Now()
	for _, pid := range cfg.PIDs {
		d, err := processCPU([]int{pid})
		if err != nil {
			return s, err
		}
		s.cpu = append(s.cpu, d)
	}
	if s.clientCPU, err = processCPU(clientPIDs(p)); err != nil {
		return s, err
	}
	for _, u := range cfg.MetricsURLs {
		v, err := scrapeCounter(u, LogBytesMetric)
		if err != nil {
			return s, err
		}
		s.logged = append(s.logged, v)
	}
	for _, d := range cfg.DataDirs {
		n, err := logFilesWritten(d)
		if err != nil {
			return s, err
		}
		s.files = append(s.files, n)
	}
	return s, nil
}

// runIdle opens cfg.Sessions sessions, lets them settle, then measures
// the servers over cfg.Hold while the sessions only ping.
func runIdle(ctx context.Context, cfg SessionsConfig) (*IdleResult, error) {
	p, c, err := openSessions(cfg, cfg.Sessions, PhaseIdle)
	if err != nil {
		return nil, err
	}
	res := &IdleResult{Connected: *c, PingIntervalMs: float64(c.TimeoutMs) / 3, SettleSeconds: cfg.Settle.Seconds()}
	cfg.progress("idle: %d sessions open in %.1fs over %d processes; settling for %v, then measuring for %v",
		c.Sessions, c.Seconds, c.Processes, cfg.Settle, cfg.Hold)
	measured := func() error {
		if err := sleepCtx(ctx, cfg.Settle); err != nil {
			return err
		}
		before, err := sampleIdle(cfg, p)
		if err != nil {
			return err
		}
		if err := sleepCtx(ctx, cfg.Hold); err != nil {
			return err
		}
		after, err := sampleIdle(cfg, p)
		if err != nil {
			return err
		}
		res.fill(cfg, p, before, after)
		return nil
	}()
	if err := closeSessions(cfg, p); err != nil && measured == nil {
		measured = fmt.Errorf("closing the sessions: %w", err)
	}
	return res, measured
}

// fill computes the window's figures from its two samples.
func (res *IdleResult) fill(cfg SessionsConfig, p pool, before, after idleSample) {
	secs := after.at.Sub(before.at).Seconds()
	res.HoldSeconds = secs
	pings := func(r holderReply) int { return int(r.Pings) }
	pongs := func(r holderReply) int { return int(r.Pongs) }
	res.Pings = int64(sum(after.reps, pings) - sum(before.reps, pings))
	res.Pongs = int64(sum(after.reps, pongs) - sum(before.reps, pongs))
	res.Alive = sum(after.reps, func(r holderReply) int { return r.Held - r.Lost })
	res.LostSessions = lostOf(after.reps)
	res.ClientPIDs = clientPIDs(p)
	res.ClientCPUPercent = 100 * (after.clientCPU - before.clientCPU).Seconds() / secs
	perSec := func(d float64) *float64 {
		v := d / secs
		return &v
	}
	for i, addr := range cfg.Servers {
		s := IdleServer{Addr: addr, Connections: -1}
		if i < len(cfg.PIDs) {
			s.PID = cfg.PIDs[i]
			s.CPUPercent = perSec(100 * (after.cpu[i] - before.cpu[i]).Seconds())
		}
		if i < len(cfg.MetricsURLs) {
			s.LogBytesPerSec = perSec(after.logged[i] - before.logged[i])
		}
		if i < len(cfg.DataDirs) {
			s.LogFileBytesPerSec = perSec(float64(after.files[i] - before.files[i]))
		}
		if n, err := aliveConnections(addr); err == nil {
			s.Connections = n
		} else {
			cfg.progress("idle: connections of %s: %v", addr, err)
		}
		res.PerServer = append(res.PerServer, s)
	}
}

// sleepCtx waits d, or less if ctx ends (its error then).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
