package recipes

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/netdelay"
)

// BenchmarkLockContention measures the acquisition latency of the
// test-and-set and queue locks (and the reactive lock) against the
// in-process Giraffe server, with n contenders in a closed loop (each holds
// for 1 ms, then asks again at once, so n-1 wait at every moment) and an
// injected client-to-server delay. docs/primitives.md has its figures for
// the fixed kinds:
//
//	go test ./recipes -run '^$' -bench LockContention -benchtime 200x
//
// b.N is the number of acquisitions of a run, shared by its contenders.
// Metrics: acquire-ms (mean), p99-ms, and handoff-ms, the time from one
// release to the next grant (mean acquire latency over n, minus the hold).
func BenchmarkLockContention(b *testing.B) {
	addr := lkStartGiraffe(b)
	kinds := []lkKind{lkKinds[0], lkKinds[1], lkKinds[2], lkKinds[3], lkKinds[4]}
	for _, rtt := range []time.Duration{0, 5 * time.Millisecond} {
		for _, n := range []int{1, 2, 4, 8, 16, 32} {
			for _, k := range kinds {
				b.Run(fmt.Sprintf("rtt=%v/n=%d/%s", rtt, n, k.name), func(b *testing.B) {
					lkBenchRun(b, addr, k, n, rtt)
				})
			}
		}
	}
}

const lkBenchHold = time.Millisecond

func lkBenchRun(b *testing.B, addr string, k lkKind, n int, rtt time.Duration) {
	conns := make([]*client.Conn, n)
	for i := range conns {
		var opts []client.Option
		if rtt > 0 {
			opts = append(opts, client.WithDialer(netdelay.Dialer(rtt)))
		}
		conns[i] = lkConnect(b, addr, opts...)
	}
	path := fmt.Sprintf("/bench/%s/%d/%v", k.name, n, rtt)
	ctx := context.Background()
	var (
		mu   sync.Mutex
		lats []time.Duration
		wg   sync.WaitGroup
		left = b.N
	)
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		left--
		return left >= 0
	}
	b.ResetTimer()
	start := time.Now()
	for i, conn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := k.newLock(conn, path, 0)
			for take() {
				t := time.Now()
				if err := l.Lock(ctx); err != nil {
					b.Error(err)
					return
				}
				lat := time.Since(t)
				time.Sleep(lkBenchHold)
				if err := l.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				lats = append(lats, lat)
				mu.Unlock()
			}
			_ = i
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lats) == 0 {
		return
	}
	slices.Sort(lats)
	var sum time.Duration
	for _, l := range lats {
		sum += l
	}
	mean := sum / time.Duration(len(lats))
	b.ReportMetric(float64(mean)/1e6, "acquire-ms")
	b.ReportMetric(float64(lats[len(lats)*99/100])/1e6, "p99-ms")
	// Throughput view: the lock is busy for elapsed; each of the
	// len(lats) holds took lkBenchHold plus a handoff.
	b.ReportMetric(float64(elapsed/time.Duration(len(lats))-lkBenchHold)/1e6, "handoff-ms")
}
