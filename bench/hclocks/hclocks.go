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
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/bench"
	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/local"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/hc/plan"
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
	// pids are the server processes of every ensemble.
	pids map[string][]int
}

func (r *run) logf(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}

// start starts a master, one active worker and, with recruitment, two
// standby workers, each a classic ensemble of three servers with fsync,
// and a daemon that recruits only when asked (threshold 0), so that the
// placement is the test's and not the timing's.
func (r *run) start() error {
	standby := 0
	if r.test.Recruitment {
		standby = recruitedWorkers - 1
	}
	r.logf("starting the master, 1 active and %d standby worker ensembles (classic-3) and the daemon in %s", standby, r.cfg.Dir)
	svc, err := local.Start(local.Spec{Dir: r.cfg.Dir, Workers: 1, Standby: standby, Nodes: 3,
		Threshold: 0, Split: plan.ByDomain.String(), BasePort: r.cfg.BasePort, Binary: r.cfg.Binary}, 60*time.Second)
	if err != nil {
		return err
	}
	r.svc = svc
	r.pids = map[string][]int{}
	for _, e := range append([]local.Ensemble{svc.Master}, svc.Workers...) {
		c, err := launcher.Load(e.Dir)
		if err != nil {
			return err
		}
		for _, s := range c.Servers {
			r.pids[e.ID] = append(r.pids[e.ID], s.PID)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	servers := strings.Split(svc.Master.Connect, ",")
	if r.master, err = client.Connect(ctx, servers); err != nil {
		return err
	}
	r.admin, err = hc.NewClient(ctx, servers)
	return err
}

// lockName is client i's lock j: in the client's domain with locality;
// otherwise in the root domain, named so that the locks sorted by name
// interleave the clients (a cut of the sorted list splits every client's
// set alike).
func (r *run) lockName(i, j int) string {
	if r.test.Locality {
		return fmt.Sprintf("%s/l%05d", domain(i), j)
	}
	return fmt.Sprintf("/k%05d_c%03d", j, i)
}

func domain(i int) string { return fmt.Sprintf("/c%03d", i) }

// populate creates the domains and the locks, all on the active worker
// w1, before the measurement, as the paper does.
func (r *run) populate(ctx context.Context) error {
	start := time.Now()
	if r.test.Locality {
		for i := 0; i < r.cfg.Clients; i++ {
			if err := r.admin.CreateDomain(ctx, domain(i)); err != nil {
				return err
			}
		}
	}
	var names []string
	for i := 0; i < r.cfg.Clients; i++ {
		for j := 0; j < r.cfg.Locks; j++ {
			names = append(names, r.lockName(i, j))
		}
	}
	// Creations are independent: a few at once keep the ensembles busy.
	work := make(chan string)
	errc := make(chan error, 8)
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := r.admin.CreateLock(ctx, p); err != nil {
					errc <- fmt.Errorf("creating %s: %w", p, err)
					return
				}
			}
		}()
	}
feed:
	for _, p := range names {
		select {
		case work <- p:
		case err := <-errc:
			close(work)
			wg.Wait()
			return err
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	r.logf("created %d locks in %.1fs", len(names), time.Since(start).Seconds())
	return ctx.Err()
}

// recruit spreads the locks over three workers, recruiting the two
// standbys through the service's move protocol (the daemon executes the
// moves). With locality, the daemon's split (master.Rebalance, whole
// domains) is applied until every worker holds its own domains; without,
// every third of the sorted locks goes to its own worker
// (master.MoveLocks), since an equal-halves split of one worker cannot
// make thirds.
func (r *run) recruit(ctx context.Context) error {
	if !r.test.Recruitment {
		return nil
	}
	start := time.Now()
	dests := []string{"w2", "w3"}
	if r.test.Locality {
		for _, to := range dests {
			from, err := r.busiest(ctx)
			if err != nil {
				return err
			}
			if _, err := master.Rebalance(ctx, r.master, from, to, plan.ByDomain); err != nil {
				return fmt.Errorf("recruiting %s: %w", to, err)
			}
			if err := r.waitMoves(ctx); err != nil {
				return err
			}
		}
	} else {
		var all []string
		for i := 0; i < r.cfg.Clients; i++ {
			for j := 0; j < r.cfg.Locks; j++ {
				all = append(all, r.lockName(i, j))
			}
		}
		slices.Sort(all)
		third := len(all) / recruitedWorkers
		for k, to := range dests {
			part := all[(k+1)*third:]
			if k+2 < recruitedWorkers {
				part = all[(k+1)*third : (k+2)*third]
			}
			if _, err := master.MoveLocks(ctx, r.master, part, to); err != nil {
				return fmt.Errorf("recruiting %s: %w", to, err)
			}
		}
		if err := r.waitMoves(ctx); err != nil {
			return err
		}
	}
	r.logf("recruited %s in %.1fs", strings.Join(dests, " and "), time.Since(start).Seconds())
	return nil
}

// busiest returns the active worker with the most locks.
func (r *run) busiest(ctx context.Context) (string, error) {
	st, err := master.ReadStatus(ctx, r.master)
	if err != nil {
		return "", err
	}
	best, n := "", -1
	for _, c := range st.Clusters {
		if c.State == layout.Active && c.Locks > n {
			best, n = c.ID, c.Locks
		}
	}
	return best, nil
}

// waitMoves waits until the daemon has executed every planned move.
func (r *run) waitMoves(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := master.ReadStatus(ctx, r.master)
		if err != nil {
			return err
		}
		if st.Moving == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hclocks: %d moves still in progress after 2 minutes", st.Moving)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkPlacement verifies the placement the test needs, from the master's
// records: without recruitment every lock on w1; with it, a third of the
// locks on each worker, and with locality every client's locks on one
// worker of its own, without every client's locks on all three.
func (r *run) checkPlacement(ctx context.Context) error {
	perWorker := map[string]int{}
	for i := 0; i < r.cfg.Clients; i++ {
		used := map[string]bool{}
		for j := 0; j < r.cfg.Locks; j++ {
			w, err := r.admin.Locate(ctx, r.lockName(i, j))
			if err != nil {
				return err
			}
			used[w] = true
			perWorker[w]++
		}
		want := 1
		if r.test.Recruitment && !r.test.Locality {
			want = min(recruitedWorkers, r.cfg.Locks)
		}
		if len(used) != want {
			return fmt.Errorf("hclocks: test %d: client %d's locks are on %d workers, want %d", r.test.Number, i, len(used), want)
		}
	}
	if r.test.Recruitment && r.test.Locality && r.cfg.Clients >= recruitedWorkers && len(perWorker) != recruitedWorkers {
		return fmt.Errorf("hclocks: test %d: the clients' domains are on %d workers, want %d", r.test.Number, len(perWorker), recruitedWorkers)
	}
	r.logf("placement: %v", perWorker)
	return nil
}

// limit puts every ensemble's servers under a quota of their own.
func (r *run) limit() error {
	if r.cfg.CPUPerEnsemble <= 0 {
		return nil
	}
	r.groups = map[string]*cpuquota.Group{}
	for id, pids := range r.pids {
		g, err := cpuquota.New(fmt.Sprintf("giraffe-hc-%d-%s", os.Getpid(), id), r.cfg.CPUPerEnsemble)
		if err != nil {
			return err
		}
		r.groups[id] = g
		for _, pid := range pids {
			if err := g.Add(pid); err != nil {
				return fmt.Errorf("%s: server %d: %w", id, pid, err)
			}
		}
	}
	r.logf("every ensemble under a quota of %.3g CPU", r.cfg.CPUPerEnsemble)
	return nil
}

// usage is what the ensembles have used up to one moment.
type usage struct {
	cpu                map[string]time.Duration
	throttled, periods map[string]int64
}

func (r *run) usage() usage {
	u := usage{cpu: map[string]time.Duration{}, throttled: map[string]int64{}, periods: map[string]int64{}}
	for id, pids := range r.pids {
		for _, pid := range pids {
			d, _ := cpuquota.ProcessCPU(pid)
			u.cpu[id] += d
		}
		if g := r.groups[id]; g != nil {
			u.throttled[id], u.periods[id], _ = g.Throttled()
		}
	}
	return u
}

// measure runs the clients: each has its own hc.Client (a master session
// and one session per worker it uses) and Loops loops, each taking and
// releasing its share of the client's locks in turn.
func (r *run) measure(ctx context.Context) (*Result, error) {
	servers := strings.Split(r.svc.Master.Connect, ",")
	clients := make([]*hc.Client, r.cfg.Clients)
	for i := range clients {
		sto := client.WithSessionTimeout(r.cfg.SessionTimeout)
		// No lock-delay: a hold lost with its session would otherwise
		// stall its loop for the delay, and the figure would measure
		// expiries times the delay; expiries are counted instead.
		c, err := hc.NewClient(ctx, servers, hc.WithLockDelay(0), hc.WithMasterOptions(sto), hc.WithWorkerOptions(sto))
		if err != nil {
			return nil, err
		}
		defer c.Close()
		clients[i] = c
	}
	var (
		measuring atomic.Bool
		ops, errs atomic.Int64
		histMu    sync.Mutex
		hist      = bench.NewHistogram()
		wg        sync.WaitGroup
	)
	loopCtx, stop := context.WithCancel(ctx)
	defer stop()
	for i, c := range clients {
		for l := 0; l < r.cfg.Loops; l++ {
			var mine []string
			for j := l; j < r.cfg.Locks; j += r.cfg.Loops {
				mine = append(mine, r.lockName(i, j))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				local := bench.NewHistogram()
				defer func() { histMu.Lock(); hist.Merge(local); histMu.Unlock() }()
				loop(loopCtx, c, mine, func(d time.Duration, err error) {
					if !measuring.Load() {
						return
					}
					if err != nil {
						errs.Add(1)
						return
					}
					ops.Add(1)
					bench.Record(local, d)
				})
			}()
		}
	}
	r.logf("test %d: %d clients x %d loops, warming up %v, measuring %v", r.test.Number, r.cfg.Clients, r.cfg.Loops, r.cfg.Warmup, r.cfg.Duration)
	sleep(ctx, r.cfg.Warmup)
	before := r.usage()
	measuring.Store(true)
	start := time.Now()
	sleep(ctx, r.cfg.Duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	after := r.usage()
	load := loadAverage()
	res := &Result{Test: r.test.Number, Recruitment: r.test.Recruitment, Locality: r.test.Locality,
		Clients: r.cfg.Clients, Locks: r.cfg.Locks, Loops: r.cfg.Loops, Seconds: elapsed.Seconds(),
		Ops: ops.Load(), Errors: errs.Load(), CPUPerEnsemble: r.cfg.CPUPerEnsemble, LoadAvg: load}
	for _, c := range clients {
		res.SessionsPerClient += float64(len(c.Workers()))
		res.SessionExpiries += c.SessionsEnded()
	}
	res.SessionsPerClient /= float64(len(clients))
	stop()
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.OpsPerSec = float64(res.Ops) / elapsed.Seconds()
	res.Latency = bench.LatenciesOf(hist)
	st, err := master.ReadStatus(ctx, r.master)
	if err != nil {
		return nil, err
	}
	locks := map[string]int{}
	for _, c := range st.Clusters {
		locks[c.ID] = c.Locks
	}
	for _, e := range append([]local.Ensemble{r.svc.Master}, r.svc.Workers...) {
		en := Ensemble{ID: e.ID, Locks: locks[e.ID], CPUSeconds: (after.cpu[e.ID] - before.cpu[e.ID]).Seconds()}
		if p := after.periods[e.ID] - before.periods[e.ID]; p > 0 {
			en.Throttled = float64(after.throttled[e.ID]-before.throttled[e.ID]) / float64(p)
		}
		res.Ensembles = append(res.Ensembles, en)
	}
	return res, nil
}

// loop is one acquire/release loop of a client: TryAcquire then Release
// of each lock in turn, reporting every operation's latency or error,
// until ctx ends. A failed operation is retried with the next lock (a
// failed release leaves a hold that its session's end or the next
// release of the lock clears).
func loop(ctx context.Context, c *hc.Client, locks []string, report func(time.Duration, error)) {
	for k := 0; ctx.Err() == nil; k = (k + 1) % len(locks) {
		t0 := time.Now()
		h, err := c.TryAcquire(ctx, locks[k])
		if ctx.Err() != nil {
			return
		}
		report(time.Since(t0), err)
		if err != nil {
			continue
		}
		t0 = time.Now()
		err = h.Release(ctx)
		if ctx.Err() != nil {
			return
		}
		report(time.Since(t0), err)
	}
}

// loadAverage is the one-minute load average (0 if unknown).
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscan(string(b), &l)
	return l
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// close stops the service and removes the quotas' groups.
func (r *run) close() {
	if r.admin != nil {
		r.admin.Close()
	}
	if r.master != nil {
		r.master.Close()
	}
	if r.svc != nil {
		r.svc.Stop(5 * time.Second)
	}
	for _, g := range r.groups {
		g.Remove()
	}
}
