package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// GapConfig describes a failover measurement: writers keep writing while
// Disrupt runs (it kills a server), and the longest time without any
// successful write is reported.
type GapConfig struct {
	// Servers are the client addresses of the ensemble.
	Servers []string
	// Writers is the number of client sessions writing synchronously, each
	// starting on a different server.
	Writers int
	// Before and After are how long writes run before Disrupt and after it.
	Before, After time.Duration
	// Disrupt is called once, after Before (e.g. SIGKILL of the leader).
	Disrupt func() error
	// ValueSize is the payload of each write.
	ValueSize int
	// Root is the znode the writers work under.
	Root string
}

// GapResult is what a failover measurement saw.
type GapResult struct {
	// MaxGapMs is the longest interval, in the window from Disrupt to the
	// end, between two successful writes (of any writer), in ms.
	MaxGapMs float64 `json:"max_gap_ms"`
	// WritesBefore and WritesAfter count successful writes before and
	// after Disrupt.
	WritesBefore int `json:"writes_before"`
	WritesAfter  int `json:"writes_after"` // see WritesBefore
	// Errors counts failed writes (connection loss while the ensemble
	// recovers is expected).
	Errors int `json:"errors"`
	// WriterMaxGapMs is, per writer, the longest interval from Disrupt on
	// between two of its own successful writes: writer w starts on server
	// w mod len(Servers), so it shows a server that stops applying writes
	// while the others carry on.
	WriterMaxGapMs []float64 `json:"writer_max_gap_ms"`
	// WriterErrors is, per writer, how many of its writes failed from
	// Disrupt on: a writer on a server that survives the disruption and
	// keeps its connection has none.
	WriterErrors []int `json:"writer_errors"`
}

// RunGap runs a failover measurement with Giraffe's client (which
// reconnects to another server, keeping its session).
func RunGap(ctx context.Context, cfg GapConfig) (*GapResult, error) {
	if cfg.Writers <= 0 || len(cfg.Servers) == 0 || cfg.Disrupt == nil {
		return nil, errors.New("bench: gap needs writers, servers and a disruption")
	}
	if cfg.Root == "" {
		cfg.Root = "/giraffe-gap"
	}
	setup, err := client.Connect(ctx, cfg.Servers)
	if err != nil {
		return nil, err
	}
	if _, _, err := setup.Create(ctx, cfg.Root, nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
		setup.Close()
		return nil, err
	}
	setup.Close()
	var (
		mu     sync.Mutex
		okAt   []time.Time
		byW    = make([][]time.Time, cfg.Writers)
		errs   int
		errAt  = make([][]time.Time, cfg.Writers)
		wg     sync.WaitGroup
		stopAt = time.Now().Add(cfg.Before + cfg.After)
	)
	value := make([]byte, cfg.ValueSize)
	for w := 0; w < cfg.Writers; w++ {
		order := append(append([]string{}, cfg.Servers[w%len(cfg.Servers):]...), cfg.Servers[:w%len(cfg.Servers)]...)
		cl, err := client.Connect(ctx, order, client.WithoutShuffle(), client.WithSessionTimeout(10*time.Second))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		path := fmt.Sprintf("%s/w%d", cfg.Root, w)
		if _, _, err := cl.Create(ctx, path, nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil && !errors.Is(err, zkproto.ErrNodeExists) {
			return nil, err
		}
		wg.Add(1)
		w := w
		go func() {
			defer wg.Done()
			for time.Now().Before(stopAt) && ctx.Err() == nil {
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := cl.Set(wctx, path, value, client.AnyVersion)
				cancel()
				now := time.Now()
				mu.Lock()
				if err == nil {
					okAt = append(okAt, now)
					byW[w] = append(byW[w], now)
				} else {
					errs++
					errAt[w] = append(errAt[w], now)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	select {
	case <-time.After(cfg.Before):
	case <-ctx.Done():
	}
	disruptedAt := time.Now()
	derr := cfg.Disrupt()
	wg.Wait()
	if derr != nil {
		return nil, fmt.Errorf("bench: disruption: %w", derr)
	}
	sort.Slice(okAt, func(i, j int) bool { return okAt[i].Before(okAt[j]) })
	res := &GapResult{Errors: errs}
	prev := disruptedAt
	for _, t := range okAt {
		if t.Before(disruptedAt) {
			res.WritesBefore++
			continue
		}
		res.WritesAfter++
		if g := t.Sub(prev); g.Seconds()*1000 > res.MaxGapMs {
			res.MaxGapMs = g.Seconds() * 1000
		}
		prev = t
	}
	if res.WritesAfter == 0 {
		res.MaxGapMs = cfg.After.Seconds() * 1000 // never recovered
	}
	for w, ts := range byW {
		res.WriterMaxGapMs = append(res.WriterMaxGapMs, maxGapAfter(ts, disruptedAt, stopAt))
		n := 0
		for _, t := range errAt[w] {
			if !t.Before(disruptedAt) {
				n++
			}
		}
		res.WriterErrors = append(res.WriterErrors, n)
	}
	return res, nil
}

// maxGapAfter returns the longest interval, in ms, between consecutive
// times of ts (in order) from `from` on, counting the wait from the last
// one to end, when writing stopped.
func maxGapAfter(ts []time.Time, from, end time.Time) float64 {
	var gap time.Duration
	prev := from
	for _, t := range ts {
		if t.Before(from) {
			continue
		}
		gap = max(gap, t.Sub(prev))
		prev = t
	}
	gap = max(gap, end.Sub(prev))
	return gap.Seconds() * 1000
}
