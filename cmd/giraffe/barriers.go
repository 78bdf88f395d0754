package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench/barriers"
)

// newBenchBarriersCmd returns `giraffe bench barriers`: the ZooKeeper
// paper's double-barrier experiment (Table 3) against any ZooKeeper-
// protocol ensemble.
func newBenchBarriersCmd() *cobra.Command {
	var (
		servers         string
		clients, counts []int
		jsonOut         bool
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
			for _, b := range counts {
				for _, c := range clients {
					r, err := barriers.Run(ctx, list, c, b)
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
	f.IntSliceVar(&counts, "barriers", []int{200, 400, 800, 1600}, "numbers of barriers")
	f.BoolVar(&jsonOut, "json", false, "print one JSON object per cell")
	return cmd
}
