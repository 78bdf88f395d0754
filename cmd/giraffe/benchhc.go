package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench/hclocks"
)

// newBenchHCCmd returns `giraffe bench hc`: Table 1 of the paper
// Hierarchical Chubby on the hierarchical lock service.
func newBenchHCCmd() *cobra.Command {
	var (
		cfg     hclocks.Config
		jsonOut bool
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "hc",
		Short: "Hierarchical Chubby's Table 1 on the hierarchical lock service (tests 1-4)",
		Long: `hc runs one test of Table 1 of the paper Hierarchical Chubby
(docs/hierarchical-locks.md): --clients clients, each over --locks locks of its
own, take and release their locks in turn (TryAcquire, Release; each counts
one operation) for --duration after --warmup.

  test 1  recruitment, locality: 3 worker ensembles, a domain per client
  test 2  no recruitment, locality: 1 worker ensemble, a domain per client
  test 3  recruitment, no locality: 3 workers, every lock in the root domain,
          every client's locks spread over the 3 workers
  test 4  no recruitment, no locality: 1 worker, the root domain

It starts the service under --dir (a master, the workers and a daemon; classic
ensembles of 3 servers with fsync), creates the locks on one worker, recruits
the standbys through the move protocol when the test says so, checks the
placement, measures, and stops everything. --cpu-per-ensemble puts every
ensemble's servers under a CPU quota of their own (a cgroup; needs root), so
that extra ensembles get extra CPU as on machines of their own.`,
		Example: `  giraffe bench hc --test 1 --duration 50s
  giraffe bench hc --test 4 --duration 20s --cpu-per-ensemble 0.25 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !quiet {
				cfg.Progress = os.Stderr
			}
			if cfg.Dir == "" {
				dir, err := os.MkdirTemp("", "giraffe-bench-hc-")
				if err != nil {
					return err
				}
				defer os.RemoveAll(dir)
				cfg.Dir = dir
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := hclocks.Run(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			quota := "no CPU quotas"
			if res.CPUPerEnsemble > 0 {
				quota = fmt.Sprintf("%.3g CPU per ensemble", res.CPUPerEnsemble)
			}
			fmt.Printf("test %d (recruitment %v, locality %v): %d clients x %d locks, %d loops each, %s, %.1fs\n",
				res.Test, res.Recruitment, res.Locality, res.Clients, res.Locks, res.Loops, quota, res.Seconds)
			fmt.Printf("  throughput  %.0f ops/s (%d ops, %d errors)\n", res.OpsPerSec, res.Ops, res.Errors)
			fmt.Printf("  sessions    %.2f worker sessions per client, %d ended\n", res.SessionsPerClient, res.SessionExpiries)
			l := res.Latency
			fmt.Printf("  latency ms  mean %.3f  p50 %.3f  p99 %.3f  max %.3f\n", l.Mean, l.P50, l.P99, l.Max)
			for _, e := range res.Ensembles {
				fmt.Printf("  %-7s %4d locks  %.2f CPU-s  throttled %.0f%%\n", e.ID, e.Locks, e.CPUSeconds, 100*e.Throttled)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Test, "test", 1, "the paper's test: 1, 2, 3 or 4")
	f.IntVar(&cfg.Clients, "clients", 3, "clients, each with its own locks")
	f.IntVar(&cfg.Locks, "locks", 100, "locks per client")
	f.IntVar(&cfg.Loops, "loops", 1, "acquire/release loops per client, each over its share of the client's locks")
	f.DurationVar(&cfg.Warmup, "warmup", 3*time.Second, "load before measuring")
	f.DurationVar(&cfg.Duration, "duration", 50*time.Second, "measured time")
	f.Float64Var(&cfg.CPUPerEnsemble, "cpu-per-ensemble", 0, "CPU quota of every ensemble, in CPUs (0: none; needs a writable cgroup)")
	f.StringVar(&cfg.Dir, "dir", "", "directory for the service (default: a temporary one, removed afterwards)")
	f.IntVar(&cfg.BasePort, "base-port", 23181, "the master's first port; ensemble k takes the 100 from base-port + 100k")
	f.DurationVar(&cfg.SessionTimeout, "session-timeout", 10*time.Second, "the clients' session timeout")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	f.BoolVar(&quiet, "quiet", false, "no progress lines")
	return cmd
}
