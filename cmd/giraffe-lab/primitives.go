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

// newPrimitivesCmd returns `giraffe-lab primitives`: the lock experiments
// of The Cost of Consensus on a local ensemble it starts.
func newPrimitivesCmd() *cobra.Command {
	var (
		nodes, basePort   int
		out, only, binary string
		setup             primitives.Setup
	)
	cmd := &cobra.Command{
		Use:   "primitives",
		Short: "The Cost of Consensus's lock experiments: latency to acquire against RTT and contention",
		Long: `primitives starts a local classic ensemble (fsync on; a 50 ms tick and a 1.5 s
election timeout, for server round trips of up to 250 ms), then measures, for
every kind of lock (tas-sync, tas-async, queue-sync, queue-async, reactive),
the time from a lock request's arrival to the lock being held, with Poisson
arrivals and exponential times in the critical section, while it adds
round-trip time between the clients and the servers (on the clients'
connections) and between the servers (the ensemble transport's fault
injection). The experiments are the figures of The Cost of Consensus:

  fig10-rtt-grid             user RTT x cluster RTT in {0,50,100,250} ms (heatmaps)
  fig13-contention-rtt100    time in the critical section 1..150 ms, user RTT 100 ms
  fig14-contention-rtt0      the same at loopback RTT
  fig15-rtt-low-contention   user RTT 0..250 ms, 1 ms in the critical section
  fig16-rtt-high-contention  user RTT 0..250 ms, 150 ms in the critical section

Each writes NAME.csv and NAME.svg to --out and prints a line per point; at the
end it compares the reactive lock with the best fixed kind at every point.`,
		Example: `  giraffe-lab primitives --out docs/primitives
  giraffe-lab primitives --only fig15-rtt-low-contention --requests 20`,
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
			if binary == "" {
				self, err := os.Executable()
				if err != nil {
					return err
				}
				binary = filepath.Join(filepath.Dir(self), "giraffe")
			}
			// Timers for links of up to 250 ms between servers: a 50 ms
			// tick and a 1.5 s election timeout (the default 200 ms is
			// below such a round trip; ZooKeeper's default tickTime is 2 s).
			c, err := launcher.Start(launcher.Spec{Shape: members.Shape{Nodes: nodes, Classic: true}, Dir: dir, BasePort: basePort,
				Binary: binary, TickMs: 50, ElectionTicks: 30, FaultInjection: true}, 60*time.Second)
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
			primitives.Summarize(os.Stdout, gaps)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&nodes, "nodes", 3, "servers in the ensemble")
	f.IntVar(&basePort, "base-port", 0, "first port of the ensemble (0: chosen from the process id)")
	f.StringVar(&binary, "giraffe", "", "the giraffe binary the ensemble runs (default: giraffe beside this one)")
	f.StringVar(&out, "out", "docs/primitives", "directory for the CSV and SVG files")
	f.StringVar(&only, "only", "", "comma-separated experiments to run (default: all)")
	f.StringSliceVar(&setup.Kinds, "kinds", nil, "kinds of lock to measure (default: all)")
	f.IntVar(&setup.Requests, "requests", 30, "lock requests measured per point and kind")
	f.IntVar(&setup.Clients, "clients", 16, "client sessions per kind")
	f.Int64Var(&setup.Seed, "seed", 1, "seed of the arrival and service times")
	return cmd
}
