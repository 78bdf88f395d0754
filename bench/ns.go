package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// NSConfig describes a run of the namespace benchmark of *Performance
// and Reliability Isolation in ZooKeeper*: strong clients working in a
// strong namespace and weak clients in a weak one, side by side, each
// client one session with one request outstanding, so that a request's
// latency is what its client waits.
type NSConfig struct {
	// Servers are host:port client addresses; clients are spread over
	// them. WeakServers, if set, serve the weak clients instead (two
	// ensembles side by side, for comparison).
	Servers, WeakServers []string
	// Strong and Weak are the numbers of clients of each class.
	Strong, Weak int
	// StrongRoot and WeakRoot are the znodes each class works under: the
	// roots of a strong and of a weak namespace ("/1" and "/2", the
	// paper's, when empty). They are created if missing.
	StrongRoot, WeakRoot string
	// WriteRatio is the fraction of requests that are writes (setData of
	// ValueSize bytes); the others are reads (getData).
	WriteRatio float64
	ValueSize  int
	// Keys is the number of nodes each client reads and writes.
	Keys int
	// Warmup runs the load without measuring; Duration is then measured.
	Warmup, Duration time.Duration
}

// NSResult is what one namespace benchmark run measured.
type NSResult struct {
	Strong     ClassResult `json:"strong"`
	Weak       ClassResult `json:"weak"`
	WriteRatio float64     `json:"write_ratio"`
	Seconds    float64     `json:"seconds"` // length of the measured window

	// hists holds each class's write and read histograms (µs), for CDF.
	hists map[string]*hdrhistogram.Histogram
}

// ClassResult is one class of clients' measurements, in milliseconds.
type ClassResult struct {
	Clients     int     `json:"clients"`
	Root        string  `json:"root"`
	Ops         int64   `json:"ops"`    // requests answered OK in the window
	Errors      int64   `json:"errors"` // requests answered with an error in the window
	Writes      int64   `json:"writes"`
	Reads       int64   `json:"reads"`
	WriteMeanMs float64 `json:"write_mean_ms"`
	WriteP50Ms  float64 `json:"write_p50_ms"`
	WriteP90Ms  float64 `json:"write_p90_ms"`
	WriteP99Ms  float64 `json:"write_p99_ms"`
	WriteP999Ms float64 `json:"write_p999_ms"`
	ReadMeanMs  float64 `json:"read_mean_ms"`
	ReadP50Ms   float64 `json:"read_p50_ms"`
	ReadP90Ms   float64 `json:"read_p90_ms"`
	ReadP99Ms   float64 `json:"read_p99_ms"`
	ReadP999Ms  float64 `json:"read_p999_ms"`
}

// The classes of the namespace benchmark.
const (
	ClassStrong = "strong"
	ClassWeak   = "weak"
)

// nsClient is one client of the namespace benchmark.
type nsClient struct {
	class, root string
	index       int // among all clients; names its nodes
	s           *session
	// readErr gets the error that ends the session's reader.
	readErr <-chan error
	// mu guards what the reader records: a reply can arrive while the
	// run is being summed up.
	mu sync.Mutex
	// write and read are the client's own histograms, merged at the end.
	write, read       *hdrhistogram.Histogram
	ops, errs, writes int64
}

// RunNS runs the namespace benchmark and returns its measurements.
func RunNS(ctx context.Context, cfg NSConfig) (*NSResult, error) {
	if len(cfg.Servers) == 0 || cfg.Strong < 0 || cfg.Weak < 0 || cfg.Strong+cfg.Weak == 0 {
		return nil, errors.New("bench: need at least one client and one server")
	}
	if cfg.WriteRatio < 0 || cfg.WriteRatio > 1 {
		return nil, fmt.Errorf("bench: write ratio %v is not between 0 and 1", cfg.WriteRatio)
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 16
	}
	if cfg.StrongRoot == "" {
		cfg.StrongRoot = "/1"
	}
	if cfg.WeakRoot == "" {
		cfg.WeakRoot = "/2"
	}
	if len(cfg.WeakServers) == 0 {
		cfg.WeakServers = cfg.Servers
	}
	strong, err := dialAll(ctx, cfg.Servers, cfg.Strong, 1, 0)
	if err != nil {
		return nil, err
	}
	defer closeAll(strong)
	weak, err := dialAll(ctx, cfg.WeakServers, cfg.Weak, 1, 0)
	if err != nil {
		return nil, err
	}
	defer closeAll(weak)

	value := make([]byte, cfg.ValueSize)
	rand.New(rand.NewSource(1)).Read(value)
	var clients []*nsClient
	add := func(class, root string, sessions []*session) error {
		if len(sessions) == 0 {
			return nil
		}
		first := len(clients)
		paths := []string{root}
		for _, s := range sessions {
			c := &nsClient{class: class, root: root, index: len(clients), s: s, write: NewHistogram(), read: NewHistogram()}
			clients = append(clients, c)
			for k := 0; k < cfg.Keys; k++ {
				paths = append(paths, c.path(k))
			}
		}
		// The first client of the class creates the nodes.
		if err := createNodes(clients[first].s, paths, value); err != nil {
			return err
		}
		for _, c := range clients[first:] {
			c.readErr = c.s.reader()
		}
		return nil
	}
	if err := add(ClassStrong, cfg.StrongRoot, strong); err != nil {
		return nil, err
	}
	if err := add(ClassWeak, cfg.WeakRoot, weak); err != nil {
		return nil, err
	}

	var measuring atomic.Bool
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	failed := make(chan error, len(clients))
	for _, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.run(ctx, &cfg, value, &measuring); err != nil && ctx.Err() == nil {
				failed <- err
				cancel()
			}
		}()
	}
	elapsed := measureWindow(ctx, cfg.Warmup, cfg.Duration, &measuring, nil)
	cancel()
	closeAll(strong)
	closeAll(weak)
	wg.Wait()
	select {
	case err := <-failed:
		return nil, err
	default:
	}

	res := &NSResult{WriteRatio: cfg.WriteRatio, Seconds: elapsed.Seconds(), hists: map[string]*hdrhistogram.Histogram{}}
	res.Strong = summarize(res.hists, ClassStrong, cfg.StrongRoot, clients)
	res.Weak = summarize(res.hists, ClassWeak, cfg.WeakRoot, clients)
	return res, nil
}

// path names key k of the client.
func (c *nsClient) path(k int) string { return fmt.Sprintf("%s/bench-ns-c%d-k%d", c.root, c.index, k) }

// run is the client's closed loop: one request, wait for its reply, the
// next, until ctx ends.
func (c *nsClient) run(ctx context.Context, cfg *NSConfig, value []byte, measuring *atomic.Bool) error {
	rng := rand.New(rand.NewSource(int64(c.index) + 1))
	answered := make(chan struct{}, 1)
	// Another session created the client's nodes, and a weak create is
	// answered before every server has applied it: a sync first makes the
	// client's server catch up with them.
	synced := make(chan zkproto.Code, 1)
	err := c.s.send(zkproto.OpSync, &zkproto.SyncRequest{Path: c.root}, func(code zkproto.Code, _ []byte, _ time.Time) {
		synced <- code
	})
	if err == nil {
		err = c.s.flush()
	}
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-c.readErr:
		return fmt.Errorf("bench: %s client %d: %w", c.class, c.index, err)
	case code := <-synced:
		if code != zkproto.OK {
			return fmt.Errorf("bench: %s client %d: sync %s: %v", c.class, c.index, c.root, code)
		}
	}
	for {
		path := c.path(rng.Intn(cfg.Keys))
		write := rng.Float64() < cfg.WriteRatio
		done := func(code zkproto.Code, _ []byte, sent time.Time) {
			took := time.Since(sent).Microseconds()
			if measuring.Load() {
				c.record(write, code, took)
			}
			answered <- struct{}{}
		}
		var err error
		if write {
			err = c.s.send(zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: value, Version: -1}, done)
		} else {
			err = c.s.send(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path}, done)
		}
		if err == nil {
			err = c.s.flush()
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-c.readErr:
			return fmt.Errorf("bench: %s client %d: %w", c.class, c.index, err)
		case <-answered:
		}
	}
}

// record counts one answered request.
func (c *nsClient) record(write bool, code zkproto.Code, us int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code != zkproto.OK {
		c.errs++
		return
	}
	c.ops++
	if write {
		c.writes++
		c.write.RecordValue(us)
	} else {
		c.read.RecordValue(us)
	}
}

// summarize merges the histograms and counts of class's clients, keeps
// the histograms in hists (class+" write", class+" read"), and reports.
func summarize(hists map[string]*hdrhistogram.Histogram, class, root string, clients []*nsClient) ClassResult {
	w, r := NewHistogram(), NewHistogram()
	res := ClassResult{Root: root}
	for _, c := range clients {
		if c.class != class {
			continue
		}
		c.mu.Lock()
		res.Clients++
		res.Ops += c.ops
		res.Errors += c.errs
		res.Writes += c.writes
		w.Merge(c.write)
		r.Merge(c.read)
		c.mu.Unlock()
	}
	res.Reads = res.Ops - res.Writes
	hists[class+" write"], hists[class+" read"] = w, r
	if res.Writes > 0 {
		l := LatenciesOf(w)
		res.WriteMeanMs, res.WriteP50Ms, res.WriteP90Ms, res.WriteP99Ms, res.WriteP999Ms = l.Mean, l.P50, l.P90, l.P99, l.P999
	}
	if res.Reads > 0 {
		l := LatenciesOf(r)
		res.ReadMeanMs, res.ReadP50Ms, res.ReadP90Ms, res.ReadP99Ms, res.ReadP999Ms = l.Mean, l.P50, l.P90, l.P99, l.P999
	}
	return res
}

// WriteCDF writes the latency distribution of every class and kind of
// request as CSV: class,op,latency_ms,cdf, one row per histogram bucket
// that holds a request, cdf the fraction of the class's requests of that
// kind at or below latency_ms.
func (r *NSResult) WriteCDF(w io.Writer) error {
	if _, err := fmt.Fprintln(w, "class,op,latency_ms,cdf"); err != nil {
		return err
	}
	for _, class := range []string{ClassStrong, ClassWeak} {
		for _, op := range []string{"write", "read"} {
			h := r.hists[class+" "+op]
			total := h.TotalCount()
			if total == 0 {
				continue
			}
			var seen int64
			for _, bar := range h.Distribution() {
				if bar.Count == 0 {
					continue
				}
				seen += bar.Count
				if _, err := fmt.Fprintf(w, "%s,%s,%.3f,%.6f\n", class, op, float64(bar.To)/1000, float64(seen)/float64(total)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
