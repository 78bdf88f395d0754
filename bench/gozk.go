package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/gozk"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// runGoZK runs the write, read or mixed load through go-zookeeper, a
// client library written apart from Giraffe: each of Config.Sessions
// sessions has Outstanding goroutines, each with one synchronous request
// at a time (closed loop), or, with Config.Rate, one goroutine per
// arrival. The library reconnects on its own; a request that fails is an
// error.
func (r *runner) runGoZK(ctx context.Context) (*Result, error) {
	r.hist = NewHistogram()
	conns := make([]*zk.Conn, r.cfg.Sessions)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range conns {
		// Session i starts on server i, as the giraffe client's do.
		k := i % len(r.cfg.Servers)
		order := append(append([]string(nil), r.cfg.Servers[k:]...), r.cfg.Servers[:k]...)
		c, events, err := zk.Connect(order, 30*time.Second, zk.WithLogger(gozk.Quiet{}),
			zk.WithHostProvider(&gozk.InOrder{Addrs: order}))
		if err != nil {
			return nil, err
		}
		conns[i] = c
		if err := awaitSession(ctx, events); err != nil {
			return nil, fmt.Errorf("bench: go-zookeeper session %d: %w", i, err)
		}
		go r.countReconnects(events)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i, c := range conns {
		local := NewHistogram()
		var mu sync.Mutex // local, shared by the session's goroutines
		rec := func(err error, due time.Time) {
			code := zkproto.OK
			if err != nil {
				code = zkproto.ErrSystemError
			}
			mu.Lock()
			r.record(code, due, local)
			mu.Unlock()
		}
		if r.cfg.Rate > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.goZKArrivals(ctx, i, c, rec)
				mu.Lock()
				r.mergeHist(local)
				mu.Unlock()
			}()
			continue
		}
		var sw sync.WaitGroup
		for j := 0; j < r.cfg.Outstanding; j++ {
			sw.Add(1)
			rng := rand.New(rand.NewSource(int64(i*r.cfg.Outstanding+j) + 1))
			go func() {
				defer sw.Done()
				for ctx.Err() == nil {
					start := time.Now()
					rec(r.goZKRequest(c, i, rng), start)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sw.Wait()
			r.mergeHist(local)
		}()
	}
	stopProgress := r.progress(ctx)
	elapsed := measureWindow(ctx, r.cfg.Warmup, r.cfg.Duration, &r.measuring, r.cpu.mark)
	cancel()
	wg.Wait()
	stopProgress()
	return r.result(elapsed)
}

// goZKArrivals sends session i's share of Config.Rate, one goroutine per
// request, each latency counted from the request's scheduled arrival,
// until ctx ends; it returns once every request sent was answered.
func (r *runner) goZKArrivals(ctx context.Context, i int, c *zk.Conn, rec func(error, time.Time)) {
	rng := rand.New(rand.NewSource(int64(i) + 1))
	a := newArrivals(r.cfg.Rate/float64(r.cfg.Sessions), rng)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for {
		due, err := a.await(ctx, nil, nil)
		if err != nil {
			return
		}
		path, write := r.next(i, rng)
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			rec(r.goZKDo(c, path, write), due)
		}()
	}
}

// goZKRequest sends session i's next request through c and waits for it.
func (r *runner) goZKRequest(c *zk.Conn, i int, rng *rand.Rand) error {
	path, write := r.next(i, rng)
	return r.goZKDo(c, path, write)
}

func (r *runner) goZKDo(c *zk.Conn, path string, write bool) error {
	if write {
		_, err := c.Set(path, r.value, -1)
		return err
	}
	_, _, err := c.Get(path)
	return err
}

// awaitSession waits for a go-zookeeper connection's first session.
func awaitSession(ctx context.Context, events <-chan zk.Event) error {
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				return nil
			}
			if ev.State == zk.StateAuthFailed || ev.State == zk.StateExpired {
				return fmt.Errorf("state %v", ev.State)
			}
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return errors.New("no session in 30s")
		}
	}
}

// countReconnects counts the sessions a connection had after its first,
// until its event channel closes.
func (r *runner) countReconnects(events <-chan zk.Event) {
	for ev := range events {
		if ev.State == zk.StateHasSession {
			r.reconnects.Add(1)
		}
	}
}
