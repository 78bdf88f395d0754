package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// loadConfig describes one load run.
type loadConfig struct {
	endpoints        []string // client URLs; client i connects to endpoints[i%len]
	clients          int      // clientv3 clients, each its own gRPC connection
	outstanding      int      // puts each client keeps in flight
	valueSize        int      // bytes per put
	keys             int      // keys each client writes, chosen at random
	warmup, duration time.Duration
	pids             []int  // members whose CPU per put is reported
	fsyncDir         string // where the fsync probe writes: the members' disk
	prefix           string // the keys' prefix
}

// errorPause keeps a worker whose puts fail at once (a member gone) from
// spinning on the cores the members share.
const errorPause = 10 * time.Millisecond

// Result is one run's measurements, under the JSON names of
// `giraffe bench --json`: workload "write" is a put of ValueSize bytes,
// as giraffe bench's is a setData; a session is a clientv3 client.
type Result struct {
	Workload      string     `json:"workload"`       // "write"
	Servers       []string   `json:"servers"`        // the endpoints
	Sessions      int        `json:"sessions"`       // clients
	Outstanding   int        `json:"outstanding"`    // puts in flight per client
	ValueSize     int        `json:"value_size"`     // bytes per put
	Seconds       float64    `json:"seconds"`        // length of the measured window
	Ops           int64      `json:"ops"`            // puts answered OK in the window
	Errors        int64      `json:"errors"`         // puts that failed in the window
	Reconnects    int64      `json:"reconnects"`     // always 0: gRPC reconnects underneath, unseen
	ThroughputOps float64    `json:"throughput_ops"` // Ops / Seconds
	Latency       Latencies  `json:"latency_ms"`     // of the puts counted in Ops
	Client        string     `json:"client"`         // "etcd-clientv3"
	Mode          string     `json:"mode"`           // "closed": Outstanding in flight per client
	ServerCPU     *ServerCPU `json:"server_cpu,omitempty"`
	Fsync         FsyncProbe `json:"fsync_probe"`
}

func newLoadCmd() *cobra.Command {
	cfg := loadConfig{}
	var (
		endpoints string
		oneWriter bool
	)
	cmd := &cobra.Command{
		Use:   "load",
		Short: "Put values through clientv3, closed loop, and print giraffe bench's JSON",
		Long: `Put --value-size bytes on keys of etcd through clientv3 and print one JSON
line with the names of giraffe bench --json.

Closed loop: --clients clients, each its own gRPC connection to one of
--endpoints in turn, keep --outstanding puts in flight each, on --keys keys
of their own chosen at random (giraffe bench's 8 sessions x 64 outstanding
on 16 nodes each). --one-writer is one synchronous writer instead: one put
at a time, to the single endpoint given (a follower, to include the hop to
the leader). The run probes the fsync time of --fsync-dir, warms up for
--warmup, then measures for --duration; with --pids it reports the CPU
time (user + system) of those member processes in the window per put.`,
		Example: `  etcd-peer load --endpoints http://127.0.0.1:29181,http://127.0.0.1:29182,http://127.0.0.1:29183 \
    --clients 8 --outstanding 64 --pids 101,102,103
  etcd-peer load --endpoints http://127.0.0.1:29182 --one-writer --pids 101,102,103`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg.endpoints = strings.Split(endpoints, ",")
			if oneWriter {
				if len(cfg.endpoints) != 1 {
					return errors.New("--one-writer writes to one endpoint: give one")
				}
				cfg.clients, cfg.outstanding = 1, 1
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := runLoad(ctx, cfg)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(res)
		},
	}
	f := cmd.Flags()
	f.StringVar(&endpoints, "endpoints", "", "client URLs, comma-separated")
	f.IntVar(&cfg.clients, "clients", 8, "clients, each its own connection")
	f.IntVar(&cfg.outstanding, "outstanding", 64, "puts each client keeps in flight")
	f.IntVar(&cfg.valueSize, "value-size", 1024, "bytes per put")
	f.IntVar(&cfg.keys, "keys", 16, "keys each client writes")
	f.DurationVar(&cfg.warmup, "warmup", time.Second, "load before the measured window")
	f.DurationVar(&cfg.duration, "duration", 5*time.Second, "the measured window")
	f.IntSliceVar(&cfg.pids, "pids", nil, "member processes whose CPU per put is reported")
	f.StringVar(&cfg.fsyncDir, "fsync-dir", "", "directory the fsync probe writes in (default: the system's temporary one)")
	f.StringVar(&cfg.prefix, "prefix", "/giraffe-bench", "the keys' prefix")
	f.BoolVar(&oneWriter, "one-writer", false, "one synchronous writer (one put at a time) to the one endpoint")
	_ = cmd.MarkFlagRequired("endpoints")
	return cmd
}

// worker is one put in flight: its own histogram and counts, merged after
// the run, so that the workers share nothing while it runs.
type worker struct {
	hist      *hdrhistogram.Histogram
	ops, errs int64
}

// runLoad runs the closed loop and measures its window.
func runLoad(ctx context.Context, cfg loadConfig) (*Result, error) {
	switch {
	case cfg.clients <= 0 || cfg.outstanding <= 0 || cfg.keys <= 0:
		return nil, errors.New("--clients, --outstanding and --keys must be positive")
	case len(cfg.endpoints) == 0 || cfg.endpoints[0] == "":
		return nil, errors.New("no endpoints")
	case cfg.valueSize < 0:
		return nil, errors.New("negative --value-size")
	}
	if _, err := processCPU(cfg.pids); err != nil {
		return nil, err
	}
	probe := probeFsync(cfg.fsyncDir, fsyncProbeSyncs)
	clients := make([]*clientv3.Client, cfg.clients)
	defer func() {
		for _, c := range clients {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i := range clients {
		c, err := clientv3.New(clientv3.Config{
			Endpoints:   []string{cfg.endpoints[i%len(cfg.endpoints)]},
			DialTimeout: 10 * time.Second,
			Logger:      zap.NewNop(),
		})
		if err != nil {
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		clients[i] = c
	}
	value := make([]byte, cfg.valueSize)
	rand.NewChaCha8([32]byte{1}).Read(value)
	val := string(value)

	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	var measuring atomic.Bool
	workers := make([]worker, cfg.clients*cfg.outstanding)
	var wg sync.WaitGroup
	for i, c := range clients {
		keys := make([]string, cfg.keys)
		for k := range keys {
			keys[k] = fmt.Sprintf("%s/s%d-k%d", cfg.prefix, i, k)
		}
		for j := range cfg.outstanding {
			w := &workers[i*cfg.outstanding+j]
			w.hist = newHistogram()
			rng := rand.New(rand.NewPCG(uint64(i), uint64(j)))
			wg.Go(func() {
				for loadCtx.Err() == nil {
					start := time.Now()
					_, err := c.Put(loadCtx, keys[rng.IntN(len(keys))], val)
					d := time.Since(start)
					switch {
					case !measuring.Load():
					case err != nil:
						w.errs++
					default:
						w.ops++
						_ = w.hist.RecordValue(d.Microseconds())
					}
					if err != nil && loadCtx.Err() == nil {
						time.Sleep(errorPause)
					}
				}
			})
		}
	}

	select {
	case <-time.After(cfg.warmup):
	case <-ctx.Done():
	}
	cpu0, err0 := processCPU(cfg.pids)
	measuring.Store(true)
	start := time.Now()
	select {
	case <-time.After(cfg.duration):
	case <-ctx.Done():
	}
	measuring.Store(false)
	elapsed := time.Since(start)
	cpu1, err1 := processCPU(cfg.pids)
	stopLoad()
	wg.Wait()
	if err := errors.Join(err0, err1); err != nil {
		return nil, fmt.Errorf("the members' CPU: %w", err)
	}

	hist := newHistogram()
	res := &Result{Workload: "write", Servers: cfg.endpoints, Sessions: cfg.clients,
		Outstanding: cfg.outstanding, ValueSize: cfg.valueSize, Seconds: elapsed.Seconds(),
		Client: "etcd-clientv3", Mode: "closed", Fsync: probe}
	for i := range workers {
		hist.Merge(workers[i].hist)
		res.Ops += workers[i].ops
		res.Errors += workers[i].errs
	}
	res.ThroughputOps = float64(res.Ops) / res.Seconds
	res.Latency = latenciesOf(hist)
	if len(cfg.pids) > 0 {
		s := (cpu1 - cpu0).Seconds()
		res.ServerCPU = &ServerCPU{PIDs: cfg.pids, Seconds: s}
		if res.Ops > 0 {
			res.ServerCPU.PerOpUs = s * 1e6 / float64(res.Ops)
		}
	}
	return res, nil
}
