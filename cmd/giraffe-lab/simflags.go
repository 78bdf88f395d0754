package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/giraffe-coord/giraffe/sim"
	"github.com/giraffe-coord/giraffe/sim/calibrate"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// benchFlags are the flags of `giraffe-lab sim --bench`, `--failover` and
// `--calibrate`.
type benchFlags struct {
	bench       bool
	failover    string
	delivery    string
	crash       int
	calibrate   bool
	outstanding int
	payload     int
	measureMS   int64
	costFile    string
	calDir      string
}

func (b *benchFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&b.bench, "bench", false, "time a fault-free ensemble under write load with the calibrated cost model")
	f.StringVar(&b.failover, "failover", "", "crash the global leader (gl) or a group coordinator (gc) and time the recovery")
	f.StringVar(&b.delivery, "delivery", "", "crash --crash servers at once, interior members (interior) or coordinators (coordinator) of as many groups, and measure which servers stop applying new commits and for how long")
	f.IntVar(&b.crash, "crash", 1, "delivery: how many servers to crash, one per group")
	f.BoolVar(&b.calibrate, "calibrate", false, "measure the cost model on the real transport and write-ahead log, print it as JSON")
	f.IntVar(&b.outstanding, "outstanding", 0, "bench: writes in flight (0: 2000; failover: 4 per server)")
	f.IntVar(&b.payload, "payload", 1024, "bench: bytes per write")
	f.Int64Var(&b.measureMS, "measure-ms", 1000, "bench: virtual length of the measured window")
	f.StringVar(&b.costFile, "cost", "", "bench: read the cost model from this JSON file (as --calibrate prints its \"cost\")")
	f.StringVar(&b.calDir, "calibrate-dir", os.TempDir(), "calibrate: directory on the disk whose fsync is measured")
}

func runSimBench(cmd *cobra.Command, o sim.Options, b benchFlags, jsonOut bool) error {
	bo := sim.BenchOptions{Shape: o.Shape, Seed: o.Seed,
		PayloadBytes: b.payload, Outstanding: b.outstanding, MeasureUS: b.measureMS * 1000, MaxBatch: o.MaxBatch}
	if b.costFile != "" {
		raw, err := os.ReadFile(b.costFile)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(raw, &bo.Cost); err != nil {
			return fmt.Errorf("%s: %w", b.costFile, err)
		}
	}
	var out any
	if b.delivery != "" {
		r, err := sim.RunDelivery(sim.DeliveryOptions{BenchOptions: bo, Kill: b.delivery, Crash: b.crash})
		if err != nil {
			return err
		}
		out = r
		if !jsonOut {
			fmt.Fprintf(cmd.OutOrStdout(), "nodes=%d trees=%d children=%d kill=%s victims=%v baseline_lag_p99_ms=%.1f stalled=%d %v stall_max_ms=%.1f stall_mean_ms=%.1f commits=%d commit_gap_ms=%.1f\n",
				r.Nodes, r.Trees, r.Children, r.Kill, r.Victims, r.BaselineLagP99MS, len(r.Stalled), r.Stalled, r.StallMaxMS, r.StallMeanMS, r.Commits, r.CommitGapMS)
			return nil
		}
	} else if b.failover != "" {
		r, err := sim.RunFailover(sim.FailoverOptions{BenchOptions: bo, Kill: b.failover})
		if err != nil {
			return err
		}
		out = r
		if !jsonOut {
			fmt.Fprintf(cmd.OutOrStdout(), "nodes=%d trees=%d children=%d classic=%v kill=%s victim=%d recovery_ms=%.1f heartbeat_timeout_ms=%.0f recovery_timeouts=%.2f\n",
				r.Nodes, r.Trees, r.Children, r.Classic, r.Kill, r.Victim, r.RecoveryMS, r.TimeoutMS, r.Timeouts)
			return nil
		}
	} else {
		r, err := sim.RunBench(bo)
		if err != nil {
			return err
		}
		out = r
		if !jsonOut {
			fmt.Fprintf(cmd.OutOrStdout(), "nodes=%d trees=%d children=%d classic=%v throughput_ops=%.0f latency_p50_ms=%.2f latency_p99_ms=%.2f gl_cpu_us_per_commit=%.2f max_cpu_util=%.2f (server %d, %s) msgs_per_commit=%.2f\n",
				r.Nodes, r.Trees, r.Children, r.Classic, r.ThroughputOps, r.LatencyP50MS, r.LatencyP99MS, r.GLCPUUSPerComm, r.MaxCPUUtil, r.Busiest, r.BusiestRole, r.MsgsPerCommit)
			return nil
		}
	}
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), string(line))
	return nil
}

func runCalibrate(cmd *cobra.Command, b benchFlags) error {
	m, err := calibrate.Run(b.calDir, 200_000, 200)
	if err != nil {
		return err
	}
	line, err := json.Marshal(m)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), string(line))
	return nil
}
