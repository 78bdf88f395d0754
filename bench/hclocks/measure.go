package hclocks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/bench"
	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/local"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/internal/cpuquota"
)

// usage is what the ensembles have used up to one moment.
type usage struct {
	cpu                    map[string]time.Duration
	throttled, periods     map[string]int64
	fsyncs, fsyncedEntries map[string]int64
}

// usage reads the ensembles' counters. The CPU and quota counters are
// files read at once; the fsync counters come over HTTP from servers that
// may be waiting for their quota, so they are read apart (before the
// others at the start of a measurement, after them at its end), where
// their delay cannot stretch the window of the CPU counters.
func (r *run) usage(start bool) usage {
	u := usage{cpu: map[string]time.Duration{}, throttled: map[string]int64{}, periods: map[string]int64{},
		fsyncs: map[string]int64{}, fsyncedEntries: map[string]int64{}}
	scrape := func() {
		for id, servers := range r.servers {
			for _, s := range servers {
				n, entries := fsyncMetrics(s.MetricsAddr)
				u.fsyncs[id] += n
				u.fsyncedEntries[id] += entries
			}
		}
	}
	if start {
		scrape()
	}
	for id, servers := range r.servers {
		for _, s := range servers {
			d, _ := cpuquota.ProcessCPU(s.PID)
			u.cpu[id] += d
		}
		if g := r.groups[id]; g != nil {
			u.throttled[id], u.periods[id], _ = g.Throttled()
		}
	}
	if !start {
		scrape()
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
	before := r.usage(true)
	measuring.Store(true)
	start := time.Now()
	sleep(ctx, r.cfg.Duration)
	measuring.Store(false)
	elapsed := time.Since(start)
	after := r.usage(false)
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
		en.Fsyncs = after.fsyncs[e.ID] - before.fsyncs[e.ID]
		if en.Fsyncs > 0 {
			en.EntriesPerFsync = float64(after.fsyncedEntries[e.ID]-before.fsyncedEntries[e.ID]) / float64(en.Fsyncs)
		}
		if p := after.periods[e.ID] - before.periods[e.ID]; p > 0 {
			en.Throttled = float64(after.throttled[e.ID]-before.throttled[e.ID]) / float64(p)
		}
		res.Ensembles = append(res.Ensembles, en)
	}
	return res, nil
}

// loop is one acquire/release loop of a client: TryAcquire then Release
// of each lock in turn, reporting every operation's latency or error,
// until ctx ends. A failed acquire moves on to the next lock; a failed
// release is tried again until it succeeds or the hold is found ended
// (ErrNotHeld, with its session), since the client would refuse the
// lock, which it still holds, when the loop comes back to it.
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
		for {
			t0 = time.Now()
			err = h.Release(ctx)
			if ctx.Err() != nil {
				return
			}
			report(time.Since(t0), err)
			if err == nil || errors.Is(err, hc.ErrNotHeld) {
				break
			}
		}
	}
}

// fsyncMetrics reads a server's count of log fsyncs and of the entries
// they made durable from its metrics port (0, 0 if it does not answer).
func fsyncMetrics(addr string) (fsyncs, entries int64) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "giraffe_fsync_batch_entries_count":
			fsyncs = int64(v)
		case "giraffe_fsync_batch_entries_sum":
			entries = int64(v)
		}
	}
	return fsyncs, entries
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
