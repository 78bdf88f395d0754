package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Workloads understood by Run.
const (
	Write  = "write"  // setData of ValueSize bytes on existing nodes
	Read   = "read"   // getData of those nodes
	Mixed  = "mixed"  // half setData, half getData
	Create = "create" // ZooKeeper paper §5.2: each worker creates synchronously, deletes asynchronously
)

// Config describes one benchmark run against one target.
type Config struct {
	// Servers are host:port client addresses; sessions are spread over them.
	Servers []string
	// Workload is Write, Read, Mixed or Create.
	Workload string
	// Sessions is the number of client sessions (workers for Create).
	Sessions int
	// Outstanding is the number of requests each session keeps in flight
	// (ignored by Create, which is synchronous per worker).
	Outstanding int
	// ValueSize is the payload of each write, in bytes.
	ValueSize int
	// Keys is the number of nodes each session reads and writes.
	Keys int
	// Warmup runs the load without measuring; Duration is then measured.
	Warmup, Duration time.Duration
	// Progress, if set, receives a live progress line every second.
	Progress io.Writer
	// Root is the znode under which the benchmark works.
	Root string
	// Rate, when positive, makes the run open-loop: requests arrive at
	// Rate per second in all, spread evenly over the sessions, at
	// exponentially distributed intervals (a Poisson process), whether or
	// not earlier ones were answered; each latency counts from the
	// request's scheduled arrival, so a server that falls behind is
	// charged for the wait (no coordinated omission). Outstanding is then
	// ignored. Zero keeps Outstanding requests in flight per session
	// (closed loop). Not for Create.
	Rate float64
	// PIDs are server processes whose CPU time (user and system) over the
	// measured window is reported per operation (Linux).
	PIDs []int
	// FsyncDir is where the fsync probe writes before the run (the
	// servers' disk); empty: the system's temporary directory.
	FsyncDir string
	// Client is the client library the load goes through: Giraffe's own
	// pipelined one (ClientGiraffe, the default) or go-zookeeper
	// (ClientGoZookeeper), an independent implementation of the protocol.
	Client string
	// Window, if set, decides the measured window instead of Warmup and
	// Duration (Giraffe's client only): Run calls it once the load runs,
	// and it calls open as the window begins and close as it ends, then
	// returns. Requests count by their scheduled arrival: those due in
	// the window, answered up to windowDrain after it closes. The
	// sessions benchmark opens it as it drops sessions and closes it when
	// the servers have expired them.
	Window func(ctx context.Context, open, close func())
	// OpenTimeout is how long each session may take to open, its
	// refused handshakes tried again on the next servers with backoff
	// (0: DefaultOpenTimeout).
	OpenTimeout time.Duration
}

// windowDrain is how long the load runs on after a Config.Window closed,
// so that requests due in the window but answered after it count.
const windowDrain = 2 * time.Second

// Client libraries Config.Client names.
const (
	ClientGiraffe     = "giraffe"      // bench's own pipelined sessions
	ClientGoZookeeper = "go-zookeeper" // github.com/go-zookeeper/zk, one goroutine per request in flight
)

// fsyncProbeSyncs is how many fdatasyncs the probe before a run times.
const fsyncProbeSyncs = 32

// Result is what one run measured.
type Result struct {
	Workload      string    `json:"workload"`       // Config.Workload
	Servers       []string  `json:"servers"`        // Config.Servers
	Sessions      int       `json:"sessions"`       // Config.Sessions
	Outstanding   int       `json:"outstanding"`    // Config.Outstanding (1 for the create workload)
	ValueSize     int       `json:"value_size"`     // Config.ValueSize
	Seconds       float64   `json:"seconds"`        // length of the measured window
	Ops           int64     `json:"ops"`            // requests answered OK in the window
	Errors        int64     `json:"errors"`         // requests answered with an error, or lost with their connection, in the window
	Reconnects    int64     `json:"reconnects"`     // connections lost during the run and opened again (the session resumed, or a new one if it had expired)
	ThroughputOps float64   `json:"throughput_ops"` // Ops / Seconds
	Latency       Latencies `json:"latency_ms"`     // of the requests counted in Ops
	// Client is the client library (Config.Client); Mode is "closed"
	// (Outstanding in flight per session) or "open" (arrivals at
	// OfferedOps per second, Config.Rate).
	Client     string  `json:"client"`
	Mode       string  `json:"mode"`
	OfferedOps float64 `json:"offered_ops,omitempty"`
	// ServerCPU is the CPU the Config.PIDs processes used in the window.
	ServerCPU *ServerCPU `json:"server_cpu,omitempty"`
	// Fsync is the disk's fsync time just before the run.
	Fsync FsyncProbe `json:"fsync_probe"`
}

// ServerCPU is the CPU time server processes used in a measured window.
type ServerCPU struct {
	PIDs    []int   `json:"pids"`
	Seconds float64 `json:"seconds"`   // user + system, all of them
	PerOpUs float64 `json:"per_op_us"` // Seconds / Result.Ops, in microseconds
}

// Latencies are request latency percentiles in milliseconds.
type Latencies struct {
	Mean float64 `json:"mean"` // arithmetic mean
	P50  float64 `json:"p50"`  // median
	P90  float64 `json:"p90"`  // 90th percentile
	P99  float64 `json:"p99"`  // 99th percentile
	P999 float64 `json:"p999"` // 99.9th percentile
	Max  float64 `json:"max"`  // slowest request
}

// Run executes the benchmark and returns its measurements.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Sessions <= 0 || len(cfg.Servers) == 0 {
		return nil, errors.New("bench: need at least one session and one server")
	}
	if cfg.Outstanding <= 0 {
		cfg.Outstanding = 1
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 16
	}
	if cfg.Root == "" {
		cfg.Root = "/giraffe-bench"
	}
	switch cfg.Workload {
	case Write, Read, Mixed, Create:
	default:
		return nil, fmt.Errorf("bench: unknown workload %q", cfg.Workload)
	}
	if cfg.Client == "" {
		cfg.Client = ClientGiraffe
	}
	switch {
	case cfg.Client != ClientGiraffe && cfg.Client != ClientGoZookeeper:
		return nil, fmt.Errorf("bench: unknown client %q (%s or %s)", cfg.Client, ClientGiraffe, ClientGoZookeeper)
	case cfg.Rate < 0:
		return nil, errors.New("bench: negative rate")
	case cfg.Rate > 0 && cfg.Workload == Create:
		return nil, errors.New("bench: the create workload is closed-loop (one create at a time per worker); no rate")
	case cfg.Client == ClientGoZookeeper && cfg.Workload == Create:
		return nil, errors.New("bench: the create workload runs on the giraffe client")
	case cfg.Client == ClientGoZookeeper && cfg.Window != nil:
		return nil, errors.New("bench: a measured window of the caller's runs on the giraffe client")
	}
	if _, err := processCPU(cfg.PIDs); err != nil {
		return nil, err
	}
	probe := probeFsync(cfg.FsyncDir, fsyncProbeSyncs)
	pending := cfg.Outstanding
	if cfg.Rate > 0 {
		pending = openLoopPending
	}
	// go-zookeeper opens its own sessions; one of bench's prepares the nodes.
	n := cfg.Sessions
	if cfg.Client == ClientGoZookeeper {
		n = 1
	}
	sessions, err := dialAll(ctx, cfg.Servers, n, pending, cfg.OpenTimeout)
	if err != nil {
		return nil, err
	}
	defer closeAll(sessions)
	r := &runner{cfg: cfg, value: make([]byte, cfg.ValueSize), pending: pending, cpu: cpuWindow{pids: cfg.PIDs}, epoch: time.Now()}
	rand.New(rand.NewSource(1)).Read(r.value)
	if err := r.prepare(sessions[0]); err != nil {
		return nil, err
	}
	var res *Result
	if cfg.Client == ClientGoZookeeper {
		closeAll(sessions)
		res, err = r.runGoZK(ctx)
	} else {
		res, err = r.run(ctx, sessions)
	}
	if err != nil {
		return nil, err
	}
	res.Fsync = probe
	return res, nil
}

// runner holds the shared state of one run.
type runner struct {
	cfg       Config
	value     []byte
	pending   int // requests a session may have unanswered
	cpu       cpuWindow
	measuring atomic.Bool
	// epoch, from and to place a Config.Window: requests due between
	// from and to (nanoseconds after epoch; to 0 while it is open) count.
	epoch      time.Time
	from, to   atomic.Int64
	ops        atomic.Int64
	errs       atomic.Int64
	reconnects atomic.Int64
	histMu     sync.Mutex
	hist       *hdrhistogram.Histogram
	// liveMu guards live, each worker's current session: a worker that
	// lost its connection works on in a new one, which the end of the
	// run must close too.
	liveMu sync.Mutex
	live   []*session
}

// nodePath names key k of session i.
func (r *runner) nodePath(i, k int) string { return fmt.Sprintf("%s/s%d-k%d", r.cfg.Root, i, k) }

// prepare creates the root and every session's nodes (NODEEXISTS is fine).
func (r *runner) prepare(s *session) error {
	paths := []string{r.cfg.Root}
	if r.cfg.Workload != Create {
		for i := 0; i < r.cfg.Sessions; i++ {
			for k := 0; k < r.cfg.Keys; k++ {
				paths = append(paths, r.nodePath(i, k))
			}
		}
	}
	return createNodes(s, paths, r.value)
}

// closeAll closes every session.
func closeAll(sessions []*session) {
	for _, s := range sessions {
		s.close()
	}
}

// createNodes creates paths, parents first, with data value through s
// (NODEEXISTS is fine), starting s's reader, which keeps running: s is
// reused afterwards.
func createNodes(s *session, paths []string, value []byte) error {
	readErr := s.reader()
	errc := make(chan error, len(paths))
	var wg sync.WaitGroup
	for _, p := range paths {
		if len(s.pend) == cap(s.pend) {
			// The session holds no more pending requests: send those
			// buffered, so that replies make room.
			if err := s.flush(); err != nil {
				return err
			}
		}
		wg.Add(1)
		err := s.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: p, Data: value, ACL: zkproto.OpenACLUnsafe},
			func(code zkproto.Code, _ []byte, _ time.Time) {
				if code != zkproto.OK && code != zkproto.ErrNodeExists {
					errc <- fmt.Errorf("bench: creating %s: %v", p, code)
				}
				wg.Done()
			})
		if err != nil {
			return err
		}
	}
	if err := s.flush(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case err := <-errc:
		return err
	case err := <-readErr:
		return fmt.Errorf("bench: creating the benchmark nodes: %w", err)
	case <-time.After(60 * time.Second):
		return errors.New("bench: timed out creating the benchmark nodes")
	}
	select {
	case err := <-errc:
		return err
	default:
	}
	return nil
}

// measureWindow lets the load run for warmup, then sets measuring for
// duration (or until ctx ends), and returns how long it was set. mark, if
// not nil, runs as the window opens and as it closes.
func measureWindow(ctx context.Context, warmup, duration time.Duration, measuring *atomic.Bool, mark func()) time.Duration {
	select {
	case <-time.After(warmup):
	case <-ctx.Done():
	}
	if mark != nil {
		mark()
	}
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(duration):
	case <-ctx.Done():
	}
	measuring.Store(false)
	elapsed := time.Since(start)
	if mark != nil {
		mark()
	}
	return elapsed
}

// cpuWindow reads the servers' CPU time as the measured window opens and
// closes (mark).
type cpuWindow struct {
	pids       []int
	start, end time.Duration
	marks      int
	err        error
}

func (w *cpuWindow) mark() {
	if len(w.pids) == 0 {
		return
	}
	t, err := processCPU(w.pids)
	if err != nil && w.err == nil {
		w.err = err
	}
	if w.marks == 0 {
		w.start = t
	} else {
		w.end = t
	}
	w.marks++
}

// result fills what every client's run reports the same way.
func (r *runner) result(elapsed time.Duration) (*Result, error) {
	res := &Result{Workload: r.cfg.Workload, Servers: r.cfg.Servers, Sessions: r.cfg.Sessions,
		Outstanding: r.cfg.Outstanding, ValueSize: r.cfg.ValueSize, Seconds: elapsed.Seconds(),
		Ops: r.ops.Load(), Errors: r.errs.Load(), Reconnects: r.reconnects.Load(),
		Client: r.cfg.Client, Mode: "closed"}
	if r.cfg.Workload == Create {
		res.Outstanding = 1
	}
	if r.cfg.Rate > 0 {
		res.Mode, res.OfferedOps, res.Outstanding = "open", r.cfg.Rate, 0
	}
	res.ThroughputOps = float64(res.Ops) / elapsed.Seconds()
	res.Latency = LatenciesOf(r.hist)
	if w := r.cpu; len(w.pids) > 0 {
		if w.err != nil {
			return nil, w.err
		}
		c := &ServerCPU{PIDs: w.pids, Seconds: (w.end - w.start).Seconds()}
		if res.Ops > 0 {
			c.PerOpUs = c.Seconds * 1e6 / float64(res.Ops)
		}
		res.ServerCPU = c
	}
	return res, nil
}

func (r *runner) run(ctx context.Context, sessions []*session) (*Result, error) {
	r.hist = NewHistogram()
	r.live = slices.Clone(sessions)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	failed := make(chan error, len(sessions))
	for i, s := range sessions {
		wg.Add(1)
		go func(i int, s *session) {
			defer wg.Done()
			var err error
			switch {
			case r.cfg.Workload == Create:
				err = r.createWorker(ctx, i, s)
			case r.cfg.Rate > 0:
				err = r.openLoop(ctx, i, s)
			default:
				err = r.pipelined(ctx, i, s)
			}
			if err != nil && ctx.Err() == nil {
				failed <- err
				cancel()
			}
		}(i, s)
	}
	stopProgress := r.progress(ctx)
	var elapsed time.Duration
	if r.cfg.Window != nil {
		elapsed = r.window(ctx)
	} else {
		elapsed = measureWindow(ctx, r.cfg.Warmup, r.cfg.Duration, &r.measuring, r.cpu.mark)
	}
	cancel()
	r.liveMu.Lock()
	closeAll(r.live)
	r.liveMu.Unlock()
	wg.Wait()
	stopProgress()
	select {
	case err := <-failed:
		return nil, err
	default:
	}
	return r.result(elapsed)
}

// window runs Config.Window and returns how long its window was open;
// the load runs on for windowDrain after it closes.
func (r *runner) window(ctx context.Context) time.Duration {
	var start time.Time
	var elapsed time.Duration
	open := func() {
		if !start.IsZero() {
			return
		}
		r.cpu.mark()
		start = time.Now()
		r.from.Store(int64(start.Sub(r.epoch)))
		r.measuring.Store(true)
	}
	closeWindow := func() {
		if start.IsZero() || elapsed > 0 {
			return
		}
		end := time.Now()
		r.to.Store(int64(end.Sub(r.epoch)))
		elapsed = end.Sub(start)
		r.cpu.mark()
	}
	r.cfg.Window(ctx, open, closeWindow)
	closeWindow()
	if elapsed > 0 {
		select {
		case <-time.After(windowDrain):
		case <-ctx.Done():
		}
	}
	return elapsed
}

// record counts one completed request if the run is measuring (with a
// Config.Window, if it was due in the window).
func (r *runner) record(code zkproto.Code, sent time.Time, local *hdrhistogram.Histogram) {
	if !r.measuring.Load() {
		return
	}
	if r.cfg.Window != nil {
		at := int64(sent.Sub(r.epoch))
		if to := r.to.Load(); at < r.from.Load() || (to > 0 && at >= to) {
			return
		}
	}
	if code != zkproto.OK {
		r.errs.Add(1)
		return
	}
	r.ops.Add(1)
	Record(local, time.Since(sent))
}

// mergeHist folds a session's histogram into the run's.
func (r *runner) mergeHist(local *hdrhistogram.Histogram) {
	r.histMu.Lock()
	r.hist.Merge(local)
	r.histMu.Unlock()
}

// pipelined keeps cfg.Outstanding requests in flight on one session. When
// the connection fails it counts the requests in flight as errors,
// reconnects (on the next server) and carries on.
func (r *runner) pipelined(ctx context.Context, i int, s *session) error {
	local := NewHistogram()
	defer r.mergeHist(local)
	rng := rand.New(rand.NewSource(int64(i) + 1))
	for attempt := 0; ; attempt++ {
		err := r.pipeline(ctx, i, s, rng, local)
		if ctx.Err() != nil {
			s.shut() // before local is merged: the reader records into it
			return nil
		}
		s.fail()
		if s, err = r.reconnect(ctx, i, attempt, s, err); s == nil {
			return err
		}
	}
}

// pipeline runs the pipelined load on s until ctx ends (nil) or the
// connection fails (its error).
func (r *runner) pipeline(ctx context.Context, i int, s *session, rng *rand.Rand, local *hdrhistogram.Histogram) error {
	tk := make(chan struct{}, r.cfg.Outstanding)
	for j := 0; j < r.cfg.Outstanding; j++ {
		tk <- struct{}{}
	}
	readErr := s.reader()
	done := func(code zkproto.Code, _ []byte, sent time.Time) {
		r.record(code, sent, local)
		tk <- struct{}{}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return fmt.Errorf("session %d: %w", i, err)
		case <-tk:
		}
	more:
		for {
			if err := r.sendOne(s, i, rng, done); err != nil {
				return err
			}
			select {
			case <-tk:
			default:
				break more
			}
		}
		if err := s.flush(); err != nil {
			return err
		}
	}
}

// sendOne sends the next request of the workload.
func (r *runner) sendOne(s *session, i int, rng *rand.Rand, done func(zkproto.Code, []byte, time.Time)) error {
	return r.sendOneAt(s, i, rng, time.Now(), done)
}

// sendOneAt sends the next request of the workload, its latency counted
// from at.
func (r *runner) sendOneAt(s *session, i int, rng *rand.Rand, at time.Time, done func(zkproto.Code, []byte, time.Time)) error {
	path, write := r.next(i, rng)
	if write {
		return s.sendAt(zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: r.value, Version: -1}, at, done)
	}
	return s.sendAt(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path}, at, done)
}

// next draws the node and the kind (write or read) of session i's next
// request.
func (r *runner) next(i int, rng *rand.Rand) (path string, write bool) {
	path = r.nodePath(i, rng.Intn(r.cfg.Keys))
	return path, r.cfg.Workload == Write || (r.cfg.Workload == Mixed && rng.Intn(2) == 0)
}

// createWorker is one worker of the ZooKeeper paper's create benchmark: it
// creates a node, waits for the reply, then deletes it without waiting.
// When the connection fails it counts the create in flight as an error,
// reconnects and carries on.
func (r *runner) createWorker(ctx context.Context, i int, s *session) error {
	local := NewHistogram()
	defer r.mergeHist(local)
	n := 0
	for attempt := 0; ; attempt++ {
		err := r.creates(ctx, i, s, local, &n)
		if ctx.Err() != nil {
			s.shut() // before local is merged: the reader records into it
			return nil
		}
		s.fail()
		if s, err = r.reconnect(ctx, i, attempt, s, err); s == nil {
			return err
		}
	}
}

// creates runs the create workload on s until ctx ends (nil) or the
// connection fails (its error); *n numbers the nodes.
func (r *runner) creates(ctx context.Context, i int, s *session, local *hdrhistogram.Histogram, n *int) error {
	readErr := s.reader()
	created := make(chan zkproto.Code, 1)
	ignore := func(zkproto.Code, []byte, time.Time) {}
	for ; ; *n++ {
		path := fmt.Sprintf("%s/c%d-%d", r.cfg.Root, i, *n)
		err := s.send(zkproto.OpCreate, &zkproto.CreateRequest{Path: path, Data: r.value, ACL: zkproto.OpenACLUnsafe},
			func(code zkproto.Code, _ []byte, sent time.Time) {
				r.record(code, sent, local)
				created <- code
			})
		if err == nil {
			err = s.flush()
		}
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-readErr:
			return fmt.Errorf("worker %d: %w", i, err)
		case <-created:
		}
		// The delete leaves at once, as in the paper: held until the next
		// create, it would ride in that create's write.
		if err := s.send(zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: -1}, ignore); err != nil {
			return err
		}
		if err := s.flush(); err != nil {
			return err
		}
	}
}

// progress prints a live line every second until the returned func is
// called.
func (r *runner) progress(ctx context.Context) func() {
	if r.cfg.Progress == nil {
		return func() {}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(time.Second)
		defer tk.Stop()
		start := time.Now()
		var last int64
		for {
			select {
			case <-stop:
				fmt.Fprintln(r.cfg.Progress)
				return
			case <-tk.C:
				ops := r.ops.Load()
				phase := "measuring"
				if !r.measuring.Load() && ops == 0 {
					phase = "warming up"
				}
				fmt.Fprintf(r.cfg.Progress, "\r%-6s %5.0fs  %-10s %9d ops/s  errors %d  reconnects %d   ",
					r.cfg.Workload, time.Since(start).Seconds(), phase, ops-last, r.errs.Load(), r.reconnects.Load())
				last = ops
			}
		}
	}()
	return func() { close(stop); <-done }
}
