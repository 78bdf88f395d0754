package hclocks

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/local"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/hc/plan"
	"github.com/giraffe-coord/giraffe/internal/cpuquota"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// The set-up of a run: the service started, the locks created and placed
// as the test needs, the quotas applied.

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
	r.servers = map[string][]launcher.Server{}
	for _, e := range append([]local.Ensemble{svc.Master}, svc.Workers...) {
		c, err := launcher.Load(e.Dir)
		if err != nil {
			return err
		}
		r.servers[e.ID] = c.Servers
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
// records: without recruitment every client's locks on one worker (w1);
// with recruitment and locality every client's locks on one worker and
// the clients' domains on all three; with recruitment and no locality
// every client's locks on all three workers.
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
	for id, servers := range r.servers {
		g, err := cpuquota.New(fmt.Sprintf("giraffe-hc-%d-%s", os.Getpid(), id), r.cfg.CPUPerEnsemble)
		if err != nil {
			return err
		}
		r.groups[id] = g
		for _, s := range servers {
			if err := g.Add(s.PID); err != nil {
				return fmt.Errorf("%s: server %d: %w", id, s.ID, err)
			}
		}
	}
	r.logf("every ensemble under a quota of %.3g CPU", r.cfg.CPUPerEnsemble)
	return nil
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
