package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench"
)

func newBenchCmd() *cobra.Command {
	cfg := bench.Config{}
	var (
		servers  string
		jsonOut  bool
		quiet    bool
		workload string
		pids     []int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test a ZooKeeper-protocol server (Giraffe or ZooKeeper)",
		Long: `Load-test any server that speaks the ZooKeeper client protocol.

Workloads:
  write   setData of --value-size bytes on existing nodes
  read    getData of those nodes
  mixed   half setData, half getData
  create  the ZooKeeper paper's create benchmark (§5.2): each of --sessions
          workers creates a node synchronously, then deletes it asynchronously;
          the latency reported is that of the creates

Each session keeps --outstanding requests in flight (write, read, mixed:
closed loop). With --rate, requests arrive instead at that many per second
in all, at exponentially distributed intervals (a Poisson process), answered
or not, and each latency counts from the request's scheduled arrival, so a
server that falls behind is charged for the wait (open loop, no coordinated
omission).

The run probes the fsync time of --fsync-dir first (the servers' disk),
warms up for --warmup, then measures for --duration. With --pids, it reports
the CPU time (user + system) those server processes used in the measured
window per operation: the honest figure when the load generator shares the
servers' cores. --client go-zookeeper sends the load through
github.com/go-zookeeper/zk, a client written apart from Giraffe, one
goroutine per request in flight.`,
		Example: `  giraffe bench --servers 127.0.0.1:2181 --workload write --sessions 8 --outstanding 64
  giraffe bench --servers 127.0.0.1:2181 --workload create --sessions 1 --json
  giraffe bench --servers 127.0.0.1:2181 --workload write --rate 20000 --pids $(pgrep -f 'giraffe server')
  giraffe bench --servers 127.0.0.1:2181 --client go-zookeeper --pids 4242 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Servers = strings.Split(servers, ",")
			cfg.Workload = workload
			cfg.PIDs = pids
			if !quiet {
				cfg.Progress = os.Stderr
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := bench.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			load := fmt.Sprintf("%d sessions x %d outstanding", res.Sessions, res.Outstanding)
			if res.Mode == "open" {
				load = fmt.Sprintf("%d sessions, open loop at %.0f ops/s offered", res.Sessions, res.OfferedOps)
			}
			fmt.Printf("%s on %s (%s client): %s, %d-byte values, %.1fs\n",
				res.Workload, strings.Join(res.Servers, ","), res.Client, load, res.ValueSize, res.Seconds)
			fmt.Printf("  throughput  %.0f ops/s (%d ops, %d errors, %d reconnects)\n", res.ThroughputOps, res.Ops, res.Errors, res.Reconnects)
			l := res.Latency
			fmt.Printf("  latency ms  mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
				l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
			if c := res.ServerCPU; c != nil {
				fmt.Printf("  server CPU  %.1f µs per op (%.2f s over %d processes)\n", c.PerOpUs, c.Seconds, len(c.PIDs))
			}
			if p := res.Fsync; p.Skipped != "" {
				fmt.Printf("  fsync probe skipped: %s\n", p.Skipped)
			} else {
				fmt.Printf("  fsync probe %s: p50 %.3f ms  p99 %.3f ms  max %.3f ms (%d syncs of 4 KiB)\n", p.Dir, p.P50Ms, p.P99Ms, p.MaxMs, p.Syncs)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list; sessions are spread over it")
	f.StringVar(&workload, "workload", "write", "write, read, mixed or create")
	f.IntVar(&cfg.Sessions, "sessions", 8, "client sessions (workers, for create)")
	f.IntVar(&cfg.Outstanding, "outstanding", 64, "requests in flight per session")
	f.IntVar(&cfg.ValueSize, "value-size", 1024, "bytes written per write")
	f.IntVar(&cfg.Keys, "keys", 16, "nodes per session")
	f.DurationVar(&cfg.Warmup, "warmup", 5*time.Second, "load before measuring")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time")
	f.StringVar(&cfg.Root, "root", "/giraffe-bench", "znode under which the benchmark works")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	f.BoolVar(&quiet, "quiet", false, "no live progress line")
	f.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests per second in all, Poisson arrivals (0: closed loop, --outstanding per session)")
	f.IntSliceVar(&pids, "pids", nil, "server process ids whose CPU per operation is reported (comma-separated)")
	f.StringVar(&cfg.FsyncDir, "fsync-dir", "", "directory on the servers' disk where the fsync probe writes (default: the system's temporary directory)")
	f.StringVar(&cfg.Client, "client", bench.ClientGiraffe, "client library: giraffe (pipelined) or go-zookeeper")
	cmd.AddCommand(newBenchGapCmd(), newBenchBarriersCmd(), newBenchNSCmd(), newBenchHCCmd(), newBenchBigTreeCmd(), newBenchSessionsCmd())
	return cmd
}

// newBenchGapCmd returns `giraffe bench gap`: the longest write gap when a
// server is killed under load (failover time as clients see it).
func newBenchGapCmd() *cobra.Command {
	cfg := bench.GapConfig{}
	var (
		servers, killCmd string
		jsonOut          bool
	)
	cmd := &cobra.Command{
		Use:   "gap",
		Short: "Measure the longest write gap while a server is killed under load",
		Long: `gap runs --writers sessions (Giraffe's client, which reconnects to another
server with the same session) doing synchronous setData on every server of
--servers; after --before it runs --kill-cmd through sh (e.g. a SIGKILL of the
leader), keeps writing for --after, and reports the longest time between two
successful writes from the kill on.`,
		Example: `  giraffe bench gap --servers 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 \
      --kill-cmd "giraffe cluster kill 1" --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Servers = strings.Split(servers, ",")
			cfg.Disrupt = func() error {
				out, err := exec.Command("sh", "-c", killCmd).CombinedOutput()
				if err != nil {
					return fmt.Errorf("%s: %v: %s", killCmd, err, out)
				}
				return nil
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := bench.RunGap(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				b, _ := json.Marshal(res)
				fmt.Println(string(b))
				return nil
			}
			fmt.Printf("longest write gap after the kill: %.1f ms (%d writes before, %d after, %d errors)\n",
				res.MaxGapMs, res.WritesBefore, res.WritesAfter, res.Errors)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list")
	f.StringVar(&killCmd, "kill-cmd", "", "shell command that causes the failure (required)")
	f.IntVar(&cfg.Writers, "writers", 8, "writing sessions")
	f.IntVar(&cfg.ValueSize, "value-size", 1024, "bytes per write")
	f.DurationVar(&cfg.Before, "before", 2*time.Second, "writing time before the kill")
	f.DurationVar(&cfg.After, "after", 5*time.Second, "writing time after the kill")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	cmd.MarkFlagRequired("kill-cmd")
	return cmd
}

// newBenchNSCmd returns `giraffe bench ns`: strong and weak clients side
// by side, each in its namespace, as in Performance and Reliability
// Isolation in ZooKeeper.
func newBenchNSCmd() *cobra.Command {
	cfg := bench.NSConfig{}
	var (
		servers, weakServers, cdfFile string
		jsonOut                       bool
	)
	cmd := &cobra.Command{
		Use:   "ns",
		Short: "Strong and weak clients side by side, each in its namespace",
		Long: `ns runs --strong clients under --strong-root (a strong namespace's root) and
--weak clients under --weak-root (a weak namespace's), side by side. Each
client is one session with one request outstanding: a setData of
--value-size bytes with probability --write-ratio, else a getData, on one of
its --keys nodes. The run warms up for --warmup, then measures for
--duration, and reports per class the mean, p50, p90, p99 and p99.9 latency
of writes and of reads; --cdf writes their distributions as CSV
(class,op,latency_ms,cdf). With --weak-servers the weak clients use other
servers (two ensembles side by side, for comparison).`,
		Example: `  giraffe bench ns --servers 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 \
      --strong 3 --weak 3 --write-ratio 0.5 --duration 30s --json --cdf ns.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Servers = strings.Split(servers, ",")
			if weakServers != "" {
				cfg.WeakServers = strings.Split(weakServers, ",")
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := bench.RunNS(ctx, cfg)
			if err != nil {
				return err
			}
			if cdfFile != "" {
				if err := writeFileWith(cdfFile, res.WriteCDF); err != nil {
					return err
				}
			}
			if jsonOut {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			fmt.Printf("%.0f%% writes, %.1fs measured\n", 100*res.WriteRatio, res.Seconds)
			for _, c := range []struct {
				name string
				r    bench.ClassResult
			}{{"strong", res.Strong}, {"weak", res.Weak}} {
				r := c.r
				fmt.Printf("%-6s %d clients under %s: %d ops (%d writes, %d reads), %d errors\n",
					c.name, r.Clients, r.Root, r.Ops, r.Writes, r.Reads, r.Errors)
				fmt.Printf("  write ms  mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f\n",
					r.WriteMeanMs, r.WriteP50Ms, r.WriteP90Ms, r.WriteP99Ms, r.WriteP999Ms)
				fmt.Printf("  read ms   mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f\n",
					r.ReadMeanMs, r.ReadP50Ms, r.ReadP90Ms, r.ReadP99Ms, r.ReadP999Ms)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list; clients are spread over it")
	f.StringVar(&weakServers, "weak-servers", "", "servers of the weak clients, if not --servers")
	f.IntVar(&cfg.Strong, "strong", 3, "strong clients")
	f.IntVar(&cfg.Weak, "weak", 3, "weak clients")
	f.StringVar(&cfg.StrongRoot, "strong-root", "/1", "root of the strong namespace")
	f.StringVar(&cfg.WeakRoot, "weak-root", "/2", "root of the weak namespace")
	f.Float64Var(&cfg.WriteRatio, "write-ratio", 0.5, "fraction of requests that are writes (0 to 1)")
	f.IntVar(&cfg.ValueSize, "value-size", 1024, "bytes written per write")
	f.IntVar(&cfg.Keys, "keys", 16, "nodes per client")
	f.DurationVar(&cfg.Warmup, "warmup", 2*time.Second, "load before measuring")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	f.StringVar(&cdfFile, "cdf", "", "write the latency distributions to this CSV file")
	return cmd
}

// writeFileWith creates path and fills it with write.
func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
