// Package hclocks runs the experiment of Table 1 of the paper
// Hierarchical Chubby on the hierarchical lock service (`giraffe bench
// hc`): clients, each over its own set of locks (disjoint, so that they
// never contend), acquire and release in a loop, with and without
// recruitment (one worker ensemble, or three) and with and without
// locality hints (a domain per client, or every lock in the root domain).
//
// Run starts the service on this machine (package hc/local: a master
// ensemble, worker ensembles and a daemon, as processes), creates the
// locks, recruits the workers the test asks for through the service's own
// move protocol, checks the resulting placement, optionally puts every
// ensemble under a CPU quota of its own (package internal/cpuquota), and
// then measures.
package hclocks

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/giraffe-coord/giraffe/bench"
	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/local"
	"github.com/giraffe-coord/giraffe/internal/cpuquota"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// Test is one of the paper's four tests.
type Test struct {
	// Number is 1 to 4, as in the paper's Table 1.
	Number int
	// Recruitment: the locks are spread over three worker ensembles
	// (two of them recruited from standby) instead of one.
	Recruitment bool
	// Locality: every client's locks are in a domain of its own, so that
	// the split keeps them on one worker; otherwise every lock is in the
	// root domain and, with recruitment, every client's locks are spread
	// over all three workers.
	Locality bool
}

// Tests are the paper's Table 1 columns.
var Tests = [...]Test{
	{Number: 1, Recruitment: true, Locality: true},
	{Number: 2, Recruitment: false, Locality: true},
	{Number: 3, Recruitment: true, Locality: false},
	{Number: 4, Recruitment: false, Locality: false},
}

// recruitedWorkers is the number of worker ensembles with recruitment, as
// in the paper: one active and two recruited.
const recruitedWorkers = 3

// Config describes one run.
type Config struct {
	// Test is 1 to 4.
	Test int
	// Clients each loop over Locks locks of their own.
	Clients, Locks int
	// Loops is the number of acquire/release loops each client runs at
	// once, each over its share of the client's locks (1, the paper's).
	Loops int
	// Warmup runs the loops without measuring (sessions opened, locations
	// cached); Duration is then measured.
	Warmup, Duration time.Duration
	// CPUPerEnsemble is the CPU quota of every ensemble (master and
	// workers), in CPUs; 0 runs without quotas.
	CPUPerEnsemble float64
	// Dir holds the service; BasePort is its first port (ensemble k takes
	// the 100 ports from BasePort+100k).
	Dir      string
	BasePort int
	// Binary is the giraffe executable to start; empty means this
	// process's.
	Binary string
	// SessionTimeout is the clients' worker and master session timeout.
	SessionTimeout time.Duration
	// Progress, if set, receives what the run is doing.
	Progress io.Writer
}

// Result is what one run measured.
type Result struct {
	Test        int  `json:"test"`
	Recruitment bool `json:"recruitment"`
	Locality    bool `json:"locality"`
	// OpsPerSec counts acquires and releases, each one operation.
	OpsPerSec float64 `json:"ops_per_s"`
	// SessionsPerClient is the mean number of worker sessions a client
	// had open at the end of the measurement.
	SessionsPerClient float64 `json:"sessions_per_client"`
	// SessionExpiries counts the worker sessions clients lost during the
	// warm-up and the measurement.
	SessionExpiries int     `json:"session_expiries"`
	Clients         int     `json:"clients"`
	Locks           int     `json:"locks"`
	Loops           int     `json:"loops"`
	Seconds         float64 `json:"seconds"`
	Ops             int64   `json:"ops"`
	// Errors counts failed acquires and releases (each retried).
	Errors int64 `json:"errors"`
	// CPUPerEnsemble is the quota of every ensemble (0: none).
	CPUPerEnsemble float64         `json:"cpu_per_ensemble"`
	Latency        bench.Latencies `json:"latency_ms"`
	// LoadAvg is this machine's one-minute load average at the end of
	// the measurement: what else ran beside the experiment.
	LoadAvg float64 `json:"load_avg"`
	// Ensembles are the master and the workers, as measured.
	Ensembles []Ensemble `json:"ensembles"`
}

// Ensemble is one ensemble of the run.
type Ensemble struct {
	ID string `json:"id"`
	// Locks is the number of the clients' locks it holds (workers).
	Locks int `json:"locks"`
	// CPUSeconds is the CPU its servers used during the measurement.
	CPUSeconds float64 `json:"cpu_s"`
	// Throttled is the fraction of quota periods in which it was held
	// back by its quota during the measurement (with quotas).
	Throttled float64 `json:"throttled,omitempty"`
	// Fsyncs counts its servers' log fsyncs during the measurement, and
	// EntriesPerFsync the log entries each made durable on average (the
	// servers' giraffe_fsync_batch_entries metric).
	Fsyncs          int64   `json:"fsyncs"`
	EntriesPerFsync float64 `json:"entries_per_fsync"`
}

// Run runs one test and stops what it started.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Test < 1 || cfg.Test > len(Tests) {
		return nil, fmt.Errorf("hclocks: no test %d (1 to %d)", cfg.Test, len(Tests))
	}
	if cfg.Clients < 1 || cfg.Locks < 1 || cfg.Duration <= 0 {
		return nil, errors.New("hclocks: need --clients >= 1, --locks >= 1 and a positive --duration")
	}
	if cfg.Loops < 1 {
		cfg.Loops = 1
	}
	if cfg.Loops > cfg.Locks {
		return nil, fmt.Errorf("hclocks: %d loops over %d locks per client", cfg.Loops, cfg.Locks)
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 10 * time.Second
	}
	if cfg.CPUPerEnsemble > 0 {
		// Fail before starting anything.
		if err := cpuquota.Available(); err != nil {
			return nil, fmt.Errorf("--cpu-per-ensemble: %w", err)
		}
	}
	t := Tests[cfg.Test-1]
	r := &run{cfg: cfg, test: t}
	defer r.close()
	if err := r.start(); err != nil {
		return nil, err
	}
	if err := r.populate(ctx); err != nil {
		return nil, err
	}
	if err := r.recruit(ctx); err != nil {
		return nil, err
	}
	if err := r.checkPlacement(ctx); err != nil {
		return nil, err
	}
	if err := r.limit(); err != nil {
		return nil, err
	}
	return r.measure(ctx)
}

// run is the state of one Run.
type run struct {
	cfg    Config
	test   Test
	svc    *local.Service
	admin  *hc.Client
	master *client.Conn
	groups map[string]*cpuquota.Group
	// servers are the server processes of every ensemble.
	servers map[string][]launcher.Server
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}
