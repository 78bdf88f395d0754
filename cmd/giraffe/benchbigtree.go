package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/bench"
)

// newBenchBigTreeCmd returns `giraffe bench bigtree`: read and write
// latency on a big tree while the servers snapshot it.
func newBenchBigTreeCmd() *cobra.Command {
	cfg := bench.BigTreeConfig{}
	var (
		servers string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "bigtree",
		Short: "Read and write latency on a big tree while the servers snapshot it",
		Long: `bigtree creates --znodes znodes of --value-size bytes under --root (in
directories of --fanout children; a tree whose last znode exists is used as
it is), reads the resident memory of the --pids processes, then for
--duration times one synchronous reader (on the first server) and one
synchronous writer (on the last) on random znodes of the tree, while a
background open-loop writer at --rate fills the log so that the servers
take snapshots meanwhile. It reports each worker's latency percentiles and
how many of its operations took longer than --stall, and, with --snap-dir,
how many snapshot files the servers wrote in the window.`,
		Example: `  giraffe bench bigtree --servers 127.0.0.1:2181 --znodes 1000000 --rate 5000 \
      --pids $(pgrep -f 'giraffe server') --snap-dir /var/lib/giraffe --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Servers = strings.Split(servers, ",")
			if !jsonOut {
				cfg.Progress = func(line string) { fmt.Fprintln(os.Stderr, line) }
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			res, err := bench.RunBigTree(ctx, cfg)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(os.Stdout).Encode(res)
			}
			if res.PopulateSeconds > 0 {
				fmt.Printf("created %d znodes of %d bytes in %.1fs (%.0f/s)\n", res.Znodes, res.ValueSize,
					res.PopulateSeconds, res.PopulateOpsPerSec)
			}
			if res.RSSBytes > 0 {
				fmt.Printf("resident memory %.0f MiB in all, %.0f bytes per znode per server\n",
					float64(res.RSSBytes)/(1<<20), res.BytesPerZnode)
			}
			fmt.Printf("%.1fs timed, %d background writes, %d snapshot files written\n",
				res.Seconds, res.BackgroundOps, res.Snapshots)
			for _, c := range []struct {
				name string
				c    bench.Class
			}{{"read", res.Read}, {"write", res.Write}} {
				l := c.c.Latency
				fmt.Printf("  %-5s %d ops, %d errors, %d over %.0f ms; ms p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
					c.name, c.c.Ops, c.c.Errors, c.c.Stalls, res.StallMs, l.P50, l.P99, l.P999, l.Max)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list")
	f.IntVar(&cfg.Znodes, "znodes", 1000000, "znodes in the tree")
	f.IntVar(&cfg.ValueSize, "value-size", 1024, "bytes of data per znode")
	f.StringVar(&cfg.Root, "root", "/giraffe-bigtree", "znode the tree hangs from")
	f.IntVar(&cfg.Fanout, "fanout", 1000, "children per directory of the tree")
	f.DurationVar(&cfg.Duration, "duration", 20*time.Second, "timed window")
	f.Float64Var(&cfg.Rate, "rate", 5000, "background setData per second during the window (0: none)")
	f.DurationVar(&cfg.Stall, "stall", 50*time.Millisecond, "latency above which an operation counts as a stall")
	f.IntSliceVar(&cfg.PIDs, "pids", nil, "server process ids whose resident memory is reported (comma-separated)")
	f.StringSliceVar(&cfg.SnapDirs, "snap-dir", nil, "directory whose new snapshot files are counted (repeatable)")
	f.BoolVar(&jsonOut, "json", false, "print the result as one JSON object")
	return cmd
}
