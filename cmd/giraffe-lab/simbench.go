package main

import (
	"encoding/csv"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/sim"
)

// newSimBenchCmd returns `giraffe-lab simbench`: the simulator's
// benchmarks over ensemble sizes, written as what docs/benchmarks.md shows.
func newSimBenchCmd() *cobra.Command {
	var (
		out, sizes         string
		measureMS          int64
		trials, maxClassic int
		bandwidthMbit      float64
		replot             bool
	)
	cmd := &cobra.Command{
		Use:   "simbench",
		Short: "Run the simulator's benchmarks over ensemble sizes; write docs/sim's CSV files and plots",
		Long: `simbench runs the simulator's benchmarks over ensemble sizes and writes what
docs/benchmarks.md shows: CSV files of write throughput (classic mode beside
forest configurations, and the Giraffe paper's t-c shapes, with clients
spread over the servers and at the leader alone), of the global leader's
CPU per commit, of one synchronous writer's latency over links of 0.1, 1
and 10 ms, and of failover times, with SVG plots of some.

Every figure comes from sim.RunBench and sim.RunFailover with the calibrated
cost model (sim.CalibratedCost; --bandwidth-mbit changes its links'
bandwidth); runs are deterministic, so the same command gives the same
files.`,
		Example: `  giraffe-lab simbench --out docs/sim
  giraffe-lab simbench --out docs/sim --replot`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if replot {
				plotFromCSV(out)
				return nil
			}
			var ns []int
			for _, f := range splitComma(sizes) {
				n, err := strconv.Atoi(f)
				if err != nil {
					return fmt.Errorf("--sizes: %w", err)
				}
				ns = append(ns, n)
			}
			if bandwidthMbit <= 0 {
				return fmt.Errorf("--bandwidth-mbit must be positive")
			}
			cost := sim.CalibratedCost
			cost.BandwidthBpUS = bandwidthMbit / 8
			throughput(out, ns, cost, measureMS*1000, maxClassic)
			paperShapes(out, cost, measureMS*1000)
			glCPU(out, cost, measureMS*1000)
			syncLatency(out, cost)
			failover(out, cost, trials)
			plotFromCSV(out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&out, "out", "docs/sim", "directory for the CSV and SVG files")
	f.StringVar(&sizes, "sizes", "9,27,50,100,190,500,1000", "ensemble sizes of the throughput comparison")
	f.Int64Var(&measureMS, "measure-ms", 1000, "virtual length of each throughput measurement")
	f.IntVar(&trials, "trials", 5, "failover trials (seeds) per configuration")
	f.IntVar(&maxClassic, "max-classic", 500, "largest classic ensemble to run (a classic leader of 1000 servers is hopeless and slow to simulate)")
	f.Float64Var(&bandwidthMbit, "bandwidth-mbit", 10000, "every server's network bandwidth, Mbit/s (1000: a 1 GbE LAN)")
	f.BoolVar(&replot, "replot", false, "only redraw the SVG plots from the CSV files in --out")
	return cmd
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// runAll runs f over every item on all cores and returns the results in
// the items' order.
func runAll[I fmt.Stringer, T any](items []I, f func(I) (T, error)) []T {
	res := make([]T, len(items))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, s := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r, err := f(s)
			if err != nil {
				log.Fatalf("%v: %v", s, err)
			}
			log.Printf("%v: %+v", s, r)
			res[i] = r
		}()
	}
	wg.Wait()
	return res
}

// bench runs one throughput benchmark of seed 1.
func bench(o sim.BenchOptions) (sim.BenchResult, error) {
	if o.Classic {
		// A classic leader of hundreds of servers commits in bursts a few
		// hundred milliseconds apart (each takes that long to send to
		// everyone): a longer window averages over several.
		o.MeasureUS *= 3
	}
	o.Seed = 1
	return sim.RunBench(o)
}

// forestShapes are the forest configurations tried at n servers; the best
// is reported.
func forestShapes(n int) []members.Shape {
	var out []members.Shape
	for _, tc := range [][2]int{{3, 3}, {5, 2}, {5, 3}, {10, 3}} {
		if tc[0]*2 <= n {
			out = append(out, members.Shape{Nodes: n, Trees: tc[0], Children: tc[1]})
		}
	}
	return out
}

// throughput writes throughput.csv (every run) and throughput.svg (classic
// and the best forest per size).
func throughput(out string, ns []int, cost sim.Cost, measureUS int64, maxClassic int) {
	var shapes []members.Shape
	for _, n := range ns {
		if n <= maxClassic {
			shapes = append(shapes, members.Shape{Nodes: n, Classic: true})
		}
		shapes = append(shapes, forestShapes(n)...)
	}
	res := runAll(shapes, func(s members.Shape) (sim.BenchResult, error) {
		return bench(sim.BenchOptions{Shape: s, Cost: cost, MeasureUS: measureUS})
	})
	rows := [][]string{{"nodes", "mode", "trees", "children", "throughput_ops", "latency_p50_ms", "latency_p99_ms",
		"gl_cpu_us_per_commit", "max_cpu_util", "msgs_per_commit", "best_forest_over_classic"}}
	classic := map[int]float64{}
	best := map[int]sim.BenchResult{}
	for i, s := range shapes {
		r := res[i]
		if s.Classic {
			classic[s.Nodes] = r.ThroughputOps
		} else if r.ThroughputOps > best[s.Nodes].ThroughputOps {
			best[s.Nodes] = r
		}
	}
	for i, s := range shapes {
		r := res[i]
		mode, ratio := "forest", ""
		if s.Classic {
			mode = "classic"
		} else if b := best[s.Nodes]; b == r && classic[s.Nodes] > 0 {
			ratio = fmt.Sprintf("%.2f", r.ThroughputOps/classic[s.Nodes])
		}
		rows = append(rows, []string{strconv.Itoa(s.Nodes), mode, strconv.Itoa(r.Trees), strconv.Itoa(r.Children),
			f0(r.ThroughputOps), f2(r.LatencyP50MS), f2(r.LatencyP99MS), f2(r.GLCPUUSPerComm), f2(r.MaxCPUUtil),
			f2(r.MsgsPerCommit), ratio})
	}
	writeCSV(filepath.Join(out, "throughput.csv"), rows)
}

// glCPU writes glcpu.csv and glcpu.svg: the leader's CPU per commit
// against the ensemble size, one curve per number of trees.
func glCPU(out string, cost sim.Cost, measureUS int64) {
	ns := []int{30, 50, 100, 190, 300}
	ts := []int{3, 5, 10}
	var shapes []members.Shape
	for _, t := range ts {
		for _, n := range ns {
			shapes = append(shapes, members.Shape{Nodes: n, Trees: t, Children: 3})
		}
	}
	for _, n := range ns {
		shapes = append(shapes, members.Shape{Nodes: n, Classic: true})
	}
	res := runAll(shapes, func(s members.Shape) (sim.BenchResult, error) {
		return bench(sim.BenchOptions{Shape: s, Cost: cost, MeasureUS: measureUS})
	})
	rows := [][]string{{"nodes", "mode", "trees", "gl_cpu_us_per_commit", "throughput_ops", "msgs_per_commit"}}
	for i, s := range shapes {
		r := res[i]
		mode := "forest"
		if s.Classic {
			mode = "classic"
		}
		rows = append(rows, []string{strconv.Itoa(s.Nodes), mode, strconv.Itoa(r.Trees), f2(r.GLCPUUSPerComm), f0(r.ThroughputOps), f2(r.MsgsPerCommit)})
	}
	writeCSV(filepath.Join(out, "glcpu.csv"), rows)
}

// paperTC are the forest shapes (trees-children) of the Giraffe paper's
// Figures 6 to 10, beside which its ZooKeeper ran: classic here.
var paperTC = [][2]int{{3, 3}, {3, 5}, {7, 7}, {9, 9}}

// paperShapeList is classic and each of the paper's shapes at each of ns
// servers (a shape of t trees needs at least 2t servers).
func paperShapeList(ns []int) []members.Shape {
	var shapes []members.Shape
	for _, n := range ns {
		shapes = append(shapes, members.Shape{Nodes: n, Classic: true})
		for _, tc := range paperTC {
			if tc[0]*2 <= n {
				shapes = append(shapes, members.Shape{Nodes: n, Trees: tc[0], Children: tc[1]})
			}
		}
	}
	return shapes
}

// paperShapes writes shapes.csv, the write throughput of classic and of
// each of the paper's shapes at 9 to 190 servers (the analogue of its
// Figure 6), and broadcast.csv, the same with every write sent to the
// global leader, which pays nothing for clients: the atomic broadcast in
// isolation (its Figure 7).
func paperShapes(out string, cost sim.Cost, measureUS int64) {
	shapes := paperShapeList([]int{9, 27, 50, 100, 190})
	for _, atLeader := range []bool{false, true} {
		res := runAll(shapes, func(s members.Shape) (sim.BenchResult, error) {
			return bench(sim.BenchOptions{Shape: s, Cost: cost, MeasureUS: measureUS, AtLeader: atLeader})
		})
		rows := [][]string{{"nodes", "mode", "trees", "children", "throughput_ops", "latency_p50_ms", "gl_cpu_us_per_commit", "max_cpu_util"}}
		for i, s := range shapes {
			r := res[i]
			rows = append(rows, []string{strconv.Itoa(s.Nodes), modeName(s), strconv.Itoa(s.Trees), strconv.Itoa(s.Children),
				f0(r.ThroughputOps), f2(r.LatencyP50MS), f2(r.GLCPUUSPerComm), f2(r.MaxCPUUtil)})
		}
		name := "shapes.csv"
		if atLeader {
			name = "broadcast.csv"
		}
		writeCSV(filepath.Join(out, name), rows)
	}
}

// modeName names a shape in the CSV files: classic, or forest-T-C.
func modeName(s members.Shape) string {
	if s.Classic {
		return "classic"
	}
	return fmt.Sprintf("forest-%d-%d", s.Trees, s.Children)
}

// latencyRun is one synchronous-writer run: a shape and a link latency.
type latencyRun struct {
	s      members.Shape
	linkUS int64
}

func (r latencyRun) String() string { return fmt.Sprintf("%v link %d µs", r.s, r.linkUS) }

// syncLatency writes latency.csv: one synchronous writer, connected to the
// last server (not the first leader), writing 1 KiB at a time, its median
// latency against the ensemble's size for classic and the paper's
// shapes, with every link's latency 0.1, 1 and 10 ms: the analogue of the
// Giraffe paper's Figure 10 (one synchronous create worker).
func syncLatency(out string, cost sim.Cost) {
	var runs []latencyRun
	for _, link := range []int64{100, 1000, 10000} {
		for _, s := range paperShapeList([]int{3, 9, 27, 50, 100, 190}) {
			runs = append(runs, latencyRun{s, link})
		}
	}
	res := runAll(runs, func(r latencyRun) (sim.BenchResult, error) {
		c := cost
		c.LinkLatencyUS = r.linkUS
		return sim.RunBench(sim.BenchOptions{Shape: r.s, Seed: 1, Cost: c, Outstanding: 1, FirstServer: r.s.Nodes - 1,
			WarmupUS: 300_000, MeasureUS: 3_000_000})
	})
	rows := [][]string{{"link_ms", "nodes", "mode", "trees", "children", "latency_p50_ms", "latency_p99_ms", "throughput_ops"}}
	for i, r := range runs {
		b := res[i]
		rows = append(rows, []string{f1(float64(r.linkUS) / 1000), strconv.Itoa(r.s.Nodes), modeName(r.s), strconv.Itoa(r.s.Trees),
			strconv.Itoa(r.s.Children), f2(b.LatencyP50MS), f2(b.LatencyP99MS), f0(b.ThroughputOps)})
	}
	writeCSV(filepath.Join(out, "latency.csv"), rows)
}

// plotFromCSV draws throughput.svg (classic and the best forest per size)
// and glcpu.svg (one curve per number of trees, and classic) from the CSV
// files, on log-log axes: sizes span two decades, and so does classic's
// leader CPU.
func plotFromCSV(out string) {
	thr := readCSV(filepath.Join(out, "throughput.csv"))
	classic, best := map[float64]float64{}, map[float64]float64{}
	for _, r := range thr {
		n, v := num(r["nodes"]), num(r["throughput_ops"])
		if r["mode"] == "classic" {
			if v > 0 {
				classic[n] = v
			}
		} else if v > best[n] {
			best[n] = v
		}
	}
	linePlot(filepath.Join(out, "throughput.svg"), "Write throughput (simulated, calibrated cost model)",
		"servers", "writes/s", map[string]plotter.XYs{"classic (star)": points(classic), "best forest": points(best)},
		[]string{"classic (star)", "best forest"})
	series := map[string]map[float64]float64{}
	var names []string
	for _, r := range readCSV(filepath.Join(out, "glcpu.csv")) {
		name := "forest, t=" + r["trees"] + ", c=3"
		if r["mode"] == "classic" {
			name = "classic (star)"
		}
		if series[name] == nil {
			series[name] = map[float64]float64{}
			names = append(names, name)
		}
		if v := num(r["gl_cpu_us_per_commit"]); v > 0 {
			series[name][num(r["nodes"])] = v
		}
	}
	xys := map[string]plotter.XYs{}
	for name, m := range series {
		xys[name] = points(m)
	}
	linePlot(filepath.Join(out, "glcpu.svg"), "Global leader CPU per commit (simulated)", "servers", "µs per commit", xys, names)
	seriesPlot(filepath.Join(out, "shapes.svg"), "Write throughput of the Giraffe paper's shapes (simulated)", "servers", "writes/s",
		readCSV(filepath.Join(out, "shapes.csv")), func(r map[string]string) string { return r["mode"] }, "throughput_ops")
	seriesPlot(filepath.Join(out, "latency.svg"), "One synchronous writer's median latency (simulated)", "servers", "ms",
		readCSV(filepath.Join(out, "latency.csv")), func(r map[string]string) string {
			if r["mode"] != "classic" && r["mode"] != "forest-3-3" {
				return ""
			}
			return r["mode"] + ", links of " + r["link_ms"] + " ms"
		}, "latency_p50_ms")
}

// seriesPlot draws one curve per name (name of a row; "" leaves the row
// out) of column y against the rows' nodes, in the order names first
// appear.
func seriesPlot(path, title, x, y string, rows []map[string]string, name func(map[string]string) string, col string) {
	series := map[string]map[float64]float64{}
	var names []string
	for _, r := range rows {
		n := name(r)
		if n == "" {
			continue
		}
		if series[n] == nil {
			series[n] = map[float64]float64{}
			names = append(names, n)
		}
		if v := num(r[col]); v > 0 {
			series[n][num(r["nodes"])] = v
		}
	}
	xys := map[string]plotter.XYs{}
	for n, m := range series {
		xys[n] = points(m)
	}
	linePlot(path, title, x, y, xys, names)
}

func points(m map[float64]float64) plotter.XYs {
	var xs []float64
	for x := range m {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	var out plotter.XYs
	for _, x := range xs {
		out = append(out, plotter.XY{X: x, Y: m[x]})
	}
	return out
}

func num(s string) float64 {
	v, _ := strconv.ParseFloat(s, 64)
	return v
}

// readCSV reads a CSV file with a header row into maps.
func readCSV(path string) []map[string]string {
	fh, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil || len(rows) == 0 {
		log.Fatalf("%s: %v", path, err)
	}
	var out []map[string]string
	for _, r := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			if i < len(r) {
				m[h] = r[i]
			}
		}
		out = append(out, m)
	}
	return out
}

// failover writes failover.csv: recovery after a crash of the global
// leader (classic and the paper's shapes) and of a group coordinator (the
// paper's shapes), several seeds each, in heartbeat timeouts: the
// analogues of the Giraffe paper's Figures 8 and 9.
func failover(out string, cost sim.Cost, trials int) {
	var runs []failRun
	for _, s := range paperShapeList([]int{9, 27, 50, 100, 190}) {
		for seed := int64(1); seed <= int64(trials); seed++ {
			runs = append(runs, failRun{s, "gl", seed})
			if !s.Classic {
				runs = append(runs, failRun{s, "gc", seed})
			}
		}
	}
	res := runAll(runs, func(r failRun) (sim.FailoverResult, error) {
		return sim.RunFailover(sim.FailoverOptions{Kill: r.kill, BenchOptions: sim.BenchOptions{Shape: r.s, Seed: r.seed, Cost: cost}})
	})
	rows := [][]string{{"nodes", "mode", "kill", "seed", "recovery_ms", "heartbeat_timeout_ms", "recovery_timeouts"}}
	for i, r := range res {
		rows = append(rows, []string{strconv.Itoa(r.Nodes), modeName(runs[i].s), r.Kill, strconv.FormatInt(runs[i].seed, 10),
			f1(r.RecoveryMS), f0(r.TimeoutMS), f2(r.Timeouts)})
	}
	writeCSV(filepath.Join(out, "failover.csv"), rows)
}

// failRun is one failover trial.
type failRun struct {
	s    members.Shape
	kill string
	seed int64
}

func (r failRun) String() string { return fmt.Sprintf("%v kill %s seed %d", r.s, r.kill, r.seed) }

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func writeCSV(path string, rows [][]string) {
	fh, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	w := csv.NewWriter(fh)
	if err := w.WriteAll(rows); err != nil {
		log.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", path)
}

func linePlot(path, title, x, y string, series map[string]plotter.XYs, order []string) {
	p := plot.New()
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.Title.Text = title
	p.X.Label.Text = x + " (log scale)"
	p.Y.Label.Text = y + " (log scale)"
	p.Add(plotter.NewGrid())
	for i, name := range order {
		l, pts, err := plotter.NewLinePoints(series[name])
		if err != nil {
			log.Fatal(err)
		}
		c := plotutil.Color(i)
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	// Room above the curves for the legend (the axis is logarithmic).
	p.Y.Max *= math.Pow(10, 0.25*float64(len(order)))
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", path)
}
