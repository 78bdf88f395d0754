// Package primitives runs The Cost of Consensus's experiments on the locks of package
// recipes: the latency to acquire a lock under Poisson arrivals of lock
// requests, as a function of the client-to-server round-trip time, the
// server-to-server round-trip time and contention (arrival rate and time
// spent holding the lock), for each kind of lock, the reactive one
// included.
//
// A point of an experiment runs every kind of lock at once, each on its
// own lock path with its own client sessions: the load they add to the
// servers is small (one request every few hundred milliseconds per kind),
// and the round trips they see are the ones injected. Client round trips
// are added by package netdelay on the client's connections; server round
// trips by the caller (Setup.SetClusterRTT: the ensemble transport's own
// fault injection).
package primitives

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand"
	"slices"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/netdelay"
	"github.com/giraffe-coord/giraffe/recipes"
)

// Setup is where and how much to measure.
type Setup struct {
	// Servers is the ensemble's client addresses; sessions are spread
	// over them.
	Servers []string
	// SetClusterRTT adds rtt to the round trip between every two servers
	// (0 removes it). Nil: experiments that vary it are skipped.
	SetClusterRTT func(rtt time.Duration) error
	// Requests is the number of lock requests measured per point and kind;
	// a tenth as many more come first, unmeasured, so that the reactive
	// lock has measured its conditions.
	Requests int
	// Clients is the number of sessions per kind, spread over Servers:
	// request r is made by session r mod Clients, for every kind alike, so
	// that the kinds see the same requests through the same servers (and
	// a request whose session is still busy with an earlier one waits for
	// it, which counts in its latency).
	Clients int
	// Kinds are the kinds of lock measured (recipes.LockKinds if empty).
	Kinds []string
	// Seed seeds the arrival and service times.
	Seed int64
	// Progress, if set, receives a line per point.
	Progress io.Writer
}

// Point is one condition of an experiment.
type Point struct {
	UserRTT, ClusterRTT time.Duration
	// Interarrival and Service are the means of the exponential
	// distributions of the time between lock requests and of the time a
	// holder keeps the lock.
	Interarrival, Service time.Duration
}

// Result is one kind of lock measured at one point.
type Result struct {
	Point
	Kind     string
	Requests int
	// Mean, P50 and P99 of the time from a request's arrival to the lock
	// being held.
	Mean, P50, P99 time.Duration
	// SE is the standard error of Mean (the sample's standard deviation
	// over the square root of its size). Latencies of successive requests
	// are correlated (they queue behind each other), so it understates the
	// real uncertainty, most where the lock is overloaded; it says how far
	// apart two means must be before the difference means anything.
	SE time.Duration
}

// Measure runs every kind of setup at p, at once, and returns a result per
// kind in setup.Kinds order.
func Measure(ctx context.Context, setup Setup, p Point) ([]Result, error) {
	kinds := setup.Kinds
	if len(kinds) == 0 {
		kinds = recipes.LockKinds
	}
	if setup.SetClusterRTT != nil {
		if err := setup.SetClusterRTT(p.ClusterRTT); err != nil {
			return nil, fmt.Errorf("cluster RTT %v: %w", p.ClusterRTT, err)
		}
	} else if p.ClusterRTT != 0 {
		return nil, fmt.Errorf("cluster RTT %v asked for, but the setup cannot inject it", p.ClusterRTT)
	}
	out := make([]Result, len(kinds))
	errs := make([]error, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every kind sees the same arrivals and holds (common
			// random numbers), so that their differences are theirs.
			out[i], errs[i] = measureKind(ctx, setup, p, kind, setup.Seed)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if setup.Progress != nil {
		fmt.Fprintf(setup.Progress, "user RTT %v, cluster RTT %v, interarrival %v, service %v:", p.UserRTT, p.ClusterRTT, p.Interarrival, p.Service)
		for _, r := range out {
			fmt.Fprintf(setup.Progress, " %s %.1f ms;", r.Kind, ms(r.Mean))
		}
		fmt.Fprintln(setup.Progress)
	}
	return out, nil
}

// measureKind drives one kind of lock through setup.Requests arrivals.
func measureKind(ctx context.Context, setup Setup, p Point, kind string, seed int64) (Result, error) {
	res := Result{Point: p, Kind: kind}
	path := fmt.Sprintf("/bench-primitives/%s-%d", kind, time.Now().UnixNano())
	clients := max(setup.Clients, 1)
	free := make([]chan struct{}, clients) // a token while session i is idle
	locks := make([]recipes.Locker, clients)
	for i := range clients {
		servers := slices.Clone(setup.Servers)
		rot := i % len(servers)
		servers = append(servers[rot:], servers[:rot]...)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second+4*p.UserRTT)
		conn, err := client.Connect(cctx, servers, client.WithoutShuffle(), client.WithDialer(netdelay.Dialer(p.UserRTT)),
			client.WithSessionTimeout(10*time.Second+4*p.UserRTT))
		cancel()
		if err != nil {
			return res, fmt.Errorf("%s: connect: %w", kind, err)
		}
		defer conn.Close()
		l, ok := recipes.NewLockOfKind(kind, conn, path)
		if !ok {
			return res, fmt.Errorf("unknown lock kind %q", kind)
		}
		locks[i] = l
		free[i] = make(chan struct{}, 1)
		free[i] <- struct{}{}
	}
	rng := rand.New(rand.NewSource(seed))
	warmup := setup.Requests / 10
	total := setup.Requests + warmup
	lats := make([]time.Duration, total)
	errs := make(chan error, total)
	var wg sync.WaitGroup
	for r := range total {
		if err := sleep(ctx, expDuration(rng, p.Interarrival)); err != nil {
			return res, err
		}
		arrival := time.Now()
		hold := expDuration(rng, p.Service)
		w := r % clients
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-free[w]:
			case <-ctx.Done():
				errs <- ctx.Err()
				return
			}
			defer func() { free[w] <- struct{}{} }()
			if err := locks[w].Lock(ctx); err != nil {
				errs <- fmt.Errorf("%s: lock: %w", kind, err)
				return
			}
			lats[r] = time.Since(arrival)
			sleep(ctx, hold)
			if err := locks[w].Unlock(ctx); err != nil {
				errs <- fmt.Errorf("%s: unlock: %w", kind, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err, failed := <-errs; failed {
		return res, err
	}
	measured := slices.Clone(lats[warmup:])
	slices.Sort(measured)
	var sum time.Duration
	for _, l := range measured {
		sum += l
	}
	res.Requests = len(measured)
	res.Mean = sum / time.Duration(len(measured))
	var sq float64
	for _, l := range measured {
		d := float64(l - res.Mean)
		sq += d * d
	}
	if n := len(measured); n > 1 {
		res.SE = time.Duration(math.Sqrt(sq/float64(n-1)) / math.Sqrt(float64(n)))
	}
	res.P50 = measured[len(measured)/2]
	res.P99 = measured[min(len(measured)-1, int(math.Ceil(float64(len(measured))*0.99))-1)]
	return res, nil
}

// expDuration draws from the exponential distribution of mean m.
func expDuration(r *rand.Rand, m time.Duration) time.Duration {
	return time.Duration(r.ExpFloat64() * float64(m))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ms converts d to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
