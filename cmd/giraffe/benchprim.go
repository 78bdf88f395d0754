package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench/primitives"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// newBenchPrimitivesCmd returns `giraffe bench primitives`: seed 001's
// lock experiments on a local ensemble it starts.
func newBenchPrimitivesCmd() *cobra.Command {
	var (
		nodes, basePort int
		out, only       string
		setup           primitives.Setup
	)
	cmd := &cobra.Command{
		Use:   "primitives",
		Short: "Seed 001's lock experiments: latency to acquire against RTT and contention",
		Long: `primitives starts a local classic ensemble (fsync on; a 50 ms tick and a 1.5 s
election timeout, for server round trips of up to 250 ms), then measures, for
every kind of lock (tas-sync, tas-async, queue-sync, queue-async, reactive),
the time from a lock request's arrival to the lock being held, with Poisson
arrivals and exponential times in the critical section, while it adds
round-trip time between the clients and the servers (on the clients'
connections) and between the servers (the ensemble transport's fault
injection). The experiments are seed 001's figures:

  fig10-rtt-grid             user RTT x cluster RTT in {0,50,100,250} ms (heatmaps)
  fig13-contention-rtt100    time in the critical section 1..150 ms, user RTT 100 ms
  fig14-contention-rtt0      the same at loopback RTT
  fig15-rtt-low-contention   user RTT 0..250 ms, 1 ms in the critical section
  fig16-rtt-high-contention  user RTT 0..250 ms, 150 ms in the critical section

Each writes NAME.csv and NAME.svg to --out and prints a line per point; at the
end it compares the reactive lock with the best fixed kind at every point.`,
		Example: `  giraffe bench primitives --out docs/primitives
  giraffe bench primitives --only fig15-rtt-low-contention --requests 20`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// SIGTERM too: the ensemble it starts must be stopped on the way out.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			dir, err := os.MkdirTemp("", "giraffe-bench-primitives-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			if basePort == 0 {
				basePort = 20000 + os.Getpid()%20000
			}
			// Timers for links of up to 250 ms between servers: a 50 ms
			// tick and a 1.5 s election timeout (the default 200 ms is
			// below such a round trip; ZooKeeper's default tickTime is 2 s).
			c, err := launcher.Start(launcher.Spec{Shape: members.Shape{Nodes: nodes, Classic: true}, Dir: dir, BasePort: basePort,
				TickMs: 50, ElectionTicks: 30}, 60*time.Second)
			if err != nil {
				return fmt.Errorf("starting the ensemble: %w", err)
			}
			defer c.Stop(5 * time.Second)
			fmt.Fprintf(os.Stderr, "ensemble of %d servers (classic) on %s\n", nodes, c.ConnectString())
			setup.Servers = strings.Split(c.ConnectString(), ",")
			setup.Progress = os.Stderr
			setup.SetClusterRTT = func(rtt time.Duration) error {
				// Half the RTT on every server's outgoing messages: a
				// request and its answer each cross one.
				spec := "heal"
				if rtt > 0 {
					spec = fmt.Sprintf("heal; delay * %s", rtt/2)
				}
				for _, s := range c.Servers {
					if _, err := c.Fault(s.ID, spec); err != nil {
						return err
					}
				}
				return nil
			}
			// Gaps per experiment: a point measured again by a later figure
			// (Fig. 10's loopback corner is also on Figs. 14 and 15) is a
			// separate measurement and counts on its own.
			var gaps []primitives.ReactiveGap
			for _, e := range primitives.Experiments() {
				if only != "" && !strings.Contains(","+only+",", ","+e.Name+",") {
					continue
				}
				fmt.Fprintf(os.Stderr, "== %s: %s\n", e.Name, e.Title)
				rs, err := primitives.Run(ctx, setup, e)
				if err != nil {
					return fmt.Errorf("%s: %w", e.Name, err)
				}
				gaps = append(gaps, primitives.Gaps(rs)...)
				for _, write := range []func() (string, error){
					func() (string, error) { return primitives.WriteCSV(out, e.Name, rs) },
					func() (string, error) { return primitives.WritePlot(out, e, rs) },
				} {
					path, err := write()
					if err != nil {
						return err
					}
					fmt.Fprintf(os.Stderr, "wrote %s\n", filepath.Clean(path))
				}
			}
			within, clear := 0, 0
			worst := primitives.ReactiveGap{}
			for _, g := range gaps {
				if g.Ratio <= 1.10 {
					within++
				} else if g.Z >= 2 {
					clear++
				}
				if g.Ratio > worst.Ratio {
					worst = g
				}
			}
			fmt.Printf("reactive lock within 10%% of the best fixed kind at %d of %d points; over it by two standard errors or more at %d\n", within, len(gaps), clear)
			for _, g := range gaps {
				if g.Ratio > 1.10 {
					fmt.Printf("  over: %s\n", g)
				}
			}
			if len(gaps) > 0 {
				fmt.Printf("worst: %s\n", worst)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 3, "servers in the ensemble")
	f.IntVar(&basePort, "base-port", 0, "first port of the ensemble (0: chosen from the process id)")
	f.StringVar(&out, "out", "docs/primitives", "directory for the CSV and SVG files")
	f.StringVar(&only, "only", "", "comma-separated experiments to run (default: all)")
	f.StringSliceVar(&setup.Kinds, "kinds", nil, "kinds of lock to measure (default: all)")
	f.IntVar(&setup.Requests, "requests", 30, "lock requests measured per point and kind")
	f.IntVar(&setup.Clients, "clients", 16, "client sessions per kind")
	f.Int64Var(&setup.Seed, "seed", 1, "seed of the arrival and service times")
	return cmd
}

// newBenchBarriersCmd returns `giraffe bench barriers`: the ZooKeeper
// paper's double-barrier experiment (Table 3) against any ZooKeeper-
// protocol ensemble.
func newBenchBarriersCmd() *cobra.Command {
	var (
		servers           string
		clients, barriers []int
		jsonOut           bool
	)
	cmd := &cobra.Command{
		Use:   "barriers",
		Short: "The ZooKeeper paper's barrier experiment (Table 3) on any ZooKeeper-protocol ensemble",
		Long: `barriers runs the ZooKeeper paper's §5.3 experiment: C client sessions (spread
over --servers) each enter B double barriers (recipes.DoubleBarrier, kazoo's
layout) in succession, each opening when all C have entered it, then leave
all B in succession. It prints, for every C and B, the mean time a client
took, in seconds (the paper's Table 3), and the barrier operations (enters
and leaves) per second.`,
		Example: `  giraffe bench barriers --servers 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 --clients 50,100 --barriers 200,400`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			list := strings.Split(servers, ",")
			if !jsonOut {
				fmt.Println("| barriers | clients | mean time per client (s) | barrier ops/s |")
				fmt.Println("|---|---|---|---|")
			}
			for _, b := range barriers {
				for _, c := range clients {
					r, err := primitives.Barriers(ctx, list, c, b)
					if err != nil {
						return fmt.Errorf("%d clients, %d barriers: %w", c, b, err)
					}
					if jsonOut {
						fmt.Printf("{\"clients\":%d,\"barriers\":%d,\"mean_s\":%.3f,\"ops_per_sec\":%.1f}\n", c, b, r.Mean.Seconds(), r.OpsPerSec)
					} else {
						fmt.Printf("| %d | %d | %.1f | %.0f |\n", b, c, r.Mean.Seconds(), r.OpsPerSec)
					}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list; sessions are spread over it")
	f.IntSliceVar(&clients, "clients", []int{50, 100, 200}, "numbers of clients")
	f.IntSliceVar(&barriers, "barriers", []int{200, 400, 800, 1600}, "numbers of barriers")
	f.BoolVar(&jsonOut, "json", false, "print one JSON object per cell")
	return cmd
}
