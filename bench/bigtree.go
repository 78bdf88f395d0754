package bench

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// BigTreeConfig describes a big-tree run: a tree of Znodes znodes of
// ValueSize bytes, then one synchronous reader and one synchronous writer
// on random znodes of it for Duration while a background open-loop
// writer at Rate fills the log, so that the servers take snapshots of the
// whole tree while the two are timed.
type BigTreeConfig struct {
	// Servers are host:port client addresses; the reader uses the first,
	// the writer the last, the background writer all of them.
	Servers []string
	// Znodes is the size of the tree, ValueSize each znode's data.
	Znodes, ValueSize int
	// Root is the znode the tree hangs from; Fanout the children of each
	// of its directories (the znodes are Root/dI/nJ).
	Root   string
	Fanout int
	// Duration is the timed window; Rate the background writes per second
	// during it (setData of ValueSize bytes, open loop).
	Duration time.Duration
	Rate     float64
	// Stall is the latency above which a read or write counts as a stall.
	Stall time.Duration
	// PIDs are the server processes whose resident memory is read once
	// the tree is in place (Linux).
	PIDs []int
	// SnapDirs are directories whose new snapshot files (names containing
	// "snap") are counted over the window, to show it held snapshots.
	SnapDirs []string
	// Progress, if set, receives a line per populated 10% of the tree.
	Progress func(string)
	// Began, if set, is called once the timed window has begun: a fault
	// or a restart made then shows in the window's latencies.
	Began func()
}

// BigTreeResult is what a big-tree run measured.
type BigTreeResult struct {
	Servers   []string `json:"servers"`
	Znodes    int      `json:"znodes"`
	ValueSize int      `json:"value_size"`
	// PopulateSeconds is how long creating the tree took (0: it was
	// there already), PopulateOpsPerSec its creates per second.
	PopulateSeconds   float64 `json:"populate_seconds"`
	PopulateOpsPerSec float64 `json:"populate_ops_per_sec"`
	// RSSBytes is the resident memory of the PIDs with the tree in place,
	// summed; BytesPerZnode is RSSBytes / Znodes per process.
	RSSBytes      int64   `json:"rss_bytes,omitempty"`
	BytesPerZnode float64 `json:"rss_bytes_per_znode,omitempty"`
	Seconds       float64 `json:"seconds"`
	StallMs       float64 `json:"stall_ms"`
	Read          Class   `json:"read"`
	Write         Class   `json:"write"`
	// BackgroundOps is the background writes answered in the window;
	// Snapshots the new snapshot files in SnapDirs.
	BackgroundOps int64 `json:"background_ops"`
	Snapshots     int   `json:"snapshots"`
}

// Class is the timing of one synchronous worker.
type Class struct {
	Ops     int64     `json:"ops"`
	Errors  int64     `json:"errors"`
	Latency Latencies `json:"latency_ms"`
	// Stalls counts the operations slower than the run's StallMs.
	Stalls int64 `json:"stalls"`
}

// RunBigTree creates the tree (unless its last znode exists), reads the
// servers' memory, and times the reader and the writer.
func RunBigTree(ctx context.Context, cfg BigTreeConfig) (*BigTreeResult, error) {
	if len(cfg.Servers) == 0 || cfg.Znodes <= 0 {
		return nil, errors.New("bench: bigtree needs a server and a positive number of znodes")
	}
	if cfg.Root == "" {
		cfg.Root = "/giraffe-bigtree"
	}
	if cfg.Fanout <= 0 {
		cfg.Fanout = 1000
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 50 * time.Millisecond
	}
	res := &BigTreeResult{Servers: cfg.Servers, Znodes: cfg.Znodes, ValueSize: cfg.ValueSize, StallMs: float64(cfg.Stall) / 1e6}
	value := make([]byte, cfg.ValueSize)
	start := time.Now()
	created, err := populate(ctx, cfg, value)
	if err != nil {
		return nil, err
	}
	if created {
		res.PopulateSeconds = time.Since(start).Seconds()
		res.PopulateOpsPerSec = float64(cfg.Znodes) / res.PopulateSeconds
	}
	if len(cfg.PIDs) > 0 {
		for _, pid := range cfg.PIDs {
			rss, err := residentBytes(pid)
			if err != nil {
				return nil, err
			}
			res.RSSBytes += rss
		}
		res.BytesPerZnode = float64(res.RSSBytes) / float64(len(cfg.PIDs)) / float64(cfg.Znodes)
	}

	snapsBefore := snapshotFiles(cfg.SnapDirs)
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	var bg *Result
	var bgErr error
	if cfg.Rate > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bg, bgErr = Run(ctx, Config{Servers: cfg.Servers, Workload: Write, Sessions: len(cfg.Servers),
				ValueSize: cfg.ValueSize, Root: cfg.Root + "-load", Rate: cfg.Rate, Duration: cfg.Duration})
		}()
	}
	workers := []struct {
		class *Class
		write bool
		addr  string
	}{{&res.Read, false, cfg.Servers[0]}, {&res.Write, true, cfg.Servers[len(cfg.Servers)-1]}}
	errc := make(chan error, len(workers))
	began := time.Now()
	for i, w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := syncWorker(ctx, cfg, w.addr, w.write, int64(i)+1, value, w.class); err != nil {
				errc <- err
			}
		}()
	}
	if cfg.Began != nil {
		cfg.Began()
	}
	wg.Wait()
	res.Seconds = time.Since(began).Seconds()
	select {
	case err := <-errc:
		return nil, err
	default:
	}
	if bgErr != nil && !errors.Is(bgErr, context.DeadlineExceeded) {
		return nil, fmt.Errorf("bench: background writes: %w", bgErr)
	}
	if bg != nil {
		res.BackgroundOps = bg.Ops
	}
	for name := range snapshotFiles(cfg.SnapDirs) {
		if !snapsBefore[name] {
			res.Snapshots++
		}
	}
	return res, nil
}

// bigTreePath names znode i of the tree.
func bigTreePath(cfg BigTreeConfig, i int) string {
	return cfg.Root + "/d" + strconv.Itoa(i/cfg.Fanout) + "/n" + strconv.Itoa(i%cfg.Fanout)
}

// populate creates the tree through one pipelined session per server,
// unless its last znode exists already (false then).
func populate(ctx context.Context, cfg BigTreeConfig, value []byte) (bool, error) {
	s, err := dial(cfg.Servers[0], 30*time.Second, 1024)
	if err != nil {
		return false, err
	}
	defer s.close()
	exists := make(chan zkproto.Code, 1)
	if err := s.send(zkproto.OpExists, &zkproto.ExistsRequest{Path: bigTreePath(cfg, cfg.Znodes-1)},
		func(code zkproto.Code, _ []byte, _ time.Time) { exists <- code }); err != nil {
		return false, err
	}
	readErr := s.reader()
	if err := s.flush(); err != nil {
		return false, err
	}
	select {
	case code := <-exists:
		if code == zkproto.OK {
			return false, nil
		}
	case err := <-readErr:
		return false, err
	}
	dirs := []string{cfg.Root}
	for d := 0; d*cfg.Fanout < cfg.Znodes; d++ {
		dirs = append(dirs, cfg.Root+"/d"+strconv.Itoa(d))
	}
	if err := createNodes(s, dirs, nil); err != nil {
		return false, err
	}
	// Each server's session creates every len(Servers)-th chunk.
	const chunk = 4096
	var wg sync.WaitGroup
	errc := make(chan error, len(cfg.Servers))
	var mu sync.Mutex
	done, reported := 0, 0
	for k := range cfg.Servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A chunk whose session breaks (a leader change, a server
			// that stops serving for a while) is sent again on a new
			// session, to the next server after a pause: creating a
			// znode that exists counts as done.
			var s *session
			defer func() {
				if s != nil {
					s.close()
				}
			}()
			createChunk := func(paths []string) error {
				_, err := newBackoff(DefaultOpenTimeout).retry(ctx, cfg.Servers, k, func(addr string, _ time.Time) error {
					if s == nil {
						var err error
						if s, err = dial(addr, 30*time.Second, chunk); err != nil {
							return err
						}
					}
					err := createNodes(s, paths, value)
					if err != nil {
						s.close()
						s = nil
					}
					return err
				})
				return err
			}
			paths := make([]string, 0, chunk)
			for first := k * chunk; first < cfg.Znodes; first += len(cfg.Servers) * chunk {
				if ctx.Err() != nil {
					errc <- ctx.Err()
					return
				}
				paths = paths[:0]
				for i := first; i < min(first+chunk, cfg.Znodes); i++ {
					paths = append(paths, bigTreePath(cfg, i))
				}
				if err := createChunk(paths); err != nil {
					errc <- err
					return
				}
				mu.Lock()
				done += len(paths)
				if cfg.Progress != nil && done*10/cfg.Znodes > reported {
					reported = done * 10 / cfg.Znodes
					cfg.Progress(fmt.Sprintf("populated %d of %d znodes", done, cfg.Znodes))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return false, err
	default:
	}
	return true, nil
}

// syncWorker reads (or writes) random znodes of the tree one at a time
// until ctx ends, timing each into class. A request whose connection
// breaks counts as an error and goes again on a new session with the same
// server, timed from its first send, so that an outage (a leader change,
// a restart) shows in the latencies instead of ending the run.
func syncWorker(ctx context.Context, cfg BigTreeConfig, addr string, write bool, seed int64, value []byte, class *Class) error {
	c := &syncConn{addr: addr}
	defer c.close()
	hist := NewHistogram()
	rng := rand.New(rand.NewSource(seed))
	for ctx.Err() == nil {
		path := bigTreePath(cfg, rng.Intn(cfg.Znodes))
		var req zkproto.Record = &zkproto.GetDataRequest{Path: path}
		op := zkproto.OpGetData
		if write {
			req, op = &zkproto.SetDataRequest{Path: path, Data: value, Version: -1}, zkproto.OpSetData
		}
		sent := time.Now()
		code, err := c.exchange(ctx, op, req, &class.Errors)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("bench: bigtree %s: %w", op, err)
		}
		took := time.Since(sent)
		if code != zkproto.OK {
			class.Errors++
			continue
		}
		class.Ops++
		Record(hist, took)
		if took > cfg.Stall {
			class.Stalls++
		}
	}
	class.Latency = LatenciesOf(hist)
	return nil
}

// syncConn is a synchronous worker's session with one server, opened
// again when its connection breaks.
type syncConn struct {
	addr    string
	s       *session
	readErr <-chan error
	// reply is the session's own: a late reply on a broken session is not
	// taken for the answer to the request sent again.
	reply chan zkproto.Code
}

// exchange sends one request and returns the code of its reply. Each
// broken connection adds one to *broken, and the request goes again on a
// new session (after the benchmark's pauses between attempts) until ctx
// ends or no attempt succeeds within DefaultOpenTimeout.
func (c *syncConn) exchange(ctx context.Context, op zkproto.OpCode, req zkproto.Record, broken *int64) (zkproto.Code, error) {
	for {
		if c.s == nil {
			ss, err := dialAll(ctx, []string{c.addr}, 1, 1, 0)
			if err != nil {
				return 0, err
			}
			c.s, c.readErr, c.reply = ss[0], ss[0].reader(), make(chan zkproto.Code, 1)
		}
		reply := c.reply
		done := func(code zkproto.Code, _ []byte, _ time.Time) { reply <- code }
		if c.s.send(op, req, done) == nil && c.s.flush() == nil {
			select {
			case code := <-reply:
				return code, nil
			case <-c.readErr:
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
		*broken++
		c.close()
	}
}

// close closes the session, if one is open.
func (c *syncConn) close() {
	if c.s != nil {
		c.s.close()
		c.s = nil
	}
}

// residentBytes is the resident set of process pid (Linux).
func residentBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("bench: no VmRSS for process %d", pid)
}

// snapshotFiles lists the files under dirs whose names contain "snap".
func snapshotFiles(dirs []string) map[string]bool {
	files := map[string]bool{}
	for _, dir := range dirs {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.Contains(d.Name(), "snap") {
				files[path] = true
			}
			return nil
		})
	}
	return files
}
