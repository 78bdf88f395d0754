package primitives

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// Experiment is one of The Cost of Consensus's figures: points that vary one or two
// conditions.
type Experiment struct {
	// Name names the CSV and SVG files.
	Name string
	// Title says what it shows, with the figure of The Cost of Consensus it repeats.
	Title string
	// Points are the conditions measured, in order.
	Points []Point
	// X names the condition a line plot puts on its x axis ("user_rtt",
	// "service"); empty for the heatmap of user against cluster RTT.
	X string
}

var (
	// rtts are the round trips of the RTT axes, as in The Cost of Consensus (0 to 250 ms).
	rtts = []time.Duration{0, 50 * ms1, 100 * ms1, 250 * ms1}
	// curveRTTs are the finer RTT axis of the line plots.
	curveRTTs = []time.Duration{0, 25 * ms1, 50 * ms1, 100 * ms1, 150 * ms1, 250 * ms1}
	// services are the critical-section times of the contention axes.
	services = []time.Duration{1 * ms1, 25 * ms1, 50 * ms1, 100 * ms1, 150 * ms1}
)

const ms1 = time.Millisecond

// Experiments returns The Cost of Consensus's experiments, by the names of their files.
func Experiments() []Experiment {
	var grid, highRTT, lowRTT, lowCont, highCont []Point
	for _, u := range rtts {
		for _, c := range rtts {
			grid = append(grid, Point{UserRTT: u, ClusterRTT: c, Interarrival: 500 * ms1, Service: 1 * ms1})
		}
	}
	for _, s := range services {
		highRTT = append(highRTT, Point{UserRTT: 100 * ms1, Interarrival: 200 * ms1, Service: s})
		lowRTT = append(lowRTT, Point{Interarrival: 200 * ms1, Service: s})
	}
	for _, u := range curveRTTs {
		lowCont = append(lowCont, Point{UserRTT: u, Interarrival: 500 * ms1, Service: 1 * ms1})
		highCont = append(highCont, Point{UserRTT: u, Interarrival: 200 * ms1, Service: 150 * ms1})
	}
	return []Experiment{
		{Name: "fig10-rtt-grid", Title: "Fig. 10: user and cluster RTT (interarrival 500 ms, service 1 ms)", Points: grid},
		{Name: "fig13-contention-rtt100", Title: "Fig. 13: contention at user RTT 100 ms (interarrival 200 ms)", Points: highRTT, X: "service"},
		{Name: "fig14-contention-rtt0", Title: "Fig. 14: contention at loopback RTT (interarrival 200 ms)", Points: lowRTT, X: "service"},
		{Name: "fig15-rtt-low-contention", Title: "Fig. 15: user RTT, low contention (interarrival 500 ms, service 1 ms)", Points: lowCont, X: "user_rtt"},
		{Name: "fig16-rtt-high-contention", Title: "Fig. 16: user RTT, high contention (interarrival 200 ms, service 150 ms)", Points: highCont, X: "user_rtt"},
	}
}

// Run measures every point of e and returns the results, point by point.
func Run(ctx context.Context, setup Setup, e Experiment) ([]Result, error) {
	var out []Result
	for _, p := range e.Points {
		if p.ClusterRTT != 0 && setup.SetClusterRTT == nil {
			continue
		}
		rs, err := Measure(ctx, setup, p)
		if err != nil {
			return out, err
		}
		out = append(out, rs...)
	}
	if setup.SetClusterRTT != nil {
		if err := setup.SetClusterRTT(0); err != nil {
			return out, err
		}
	}
	return out, nil
}

// WriteCSV writes results to dir/NAME.csv, one row per point and kind.
func WriteCSV(dir, name string, rs []Result) (string, error) {
	path := filepath.Join(dir, name+".csv")
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	w := csv.NewWriter(f)
	w.Write([]string{"kind", "user_rtt_ms", "cluster_rtt_ms", "interarrival_ms", "service_ms", "requests", "mean_ms", "p50_ms", "p99_ms", "se_ms"})
	for _, r := range rs {
		w.Write([]string{r.Kind, num(ms(r.UserRTT)), num(ms(r.ClusterRTT)), num(ms(r.Interarrival)), num(ms(r.Service)),
			strconv.Itoa(r.Requests), num(ms(r.Mean)), num(ms(r.P50)), num(ms(r.P99)), num(ms(r.SE))})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// ReactiveGap compares, at every point, the reactive lock's mean latency
// with the best fixed kind's.
type ReactiveGap struct {
	Point
	Best     string
	BestMean time.Duration
	Reactive time.Duration
	// Ratio is Reactive / BestMean.
	Ratio float64
	// Z is the reactive lock's excess over the best fixed kind in
	// standard errors of the difference (see Result.SE): below 2 the
	// measurement cannot tell the two apart.
	Z float64
}

// Gaps returns the reactive lock's gap to the best fixed kind at every
// point of rs that measured both.
func Gaps(rs []Result) []ReactiveGap {
	byPoint := map[Point][]Result{}
	var order []Point
	for _, r := range rs {
		if _, ok := byPoint[r.Point]; !ok {
			order = append(order, r.Point)
		}
		byPoint[r.Point] = append(byPoint[r.Point], r)
	}
	var out []ReactiveGap
	for _, p := range order {
		g := ReactiveGap{Point: p, Reactive: -1, BestMean: -1}
		var reactiveSE, bestSE time.Duration
		for _, r := range byPoint[p] {
			switch {
			case r.Kind == "reactive":
				g.Reactive, reactiveSE = r.Mean, r.SE
			case g.BestMean < 0 || r.Mean < g.BestMean:
				g.Best, g.BestMean, bestSE = r.Kind, r.Mean, r.SE
			}
		}
		if g.Reactive < 0 || g.BestMean <= 0 {
			continue
		}
		g.Ratio = float64(g.Reactive) / float64(g.BestMean)
		if se := math.Hypot(float64(reactiveSE), float64(bestSE)); se > 0 {
			g.Z = float64(g.Reactive-g.BestMean) / se
		}
		out = append(out, g)
	}
	return out
}

// String describes a gap on one line.
func (g ReactiveGap) String() string {
	return fmt.Sprintf("user %v cluster %v interarrival %v service %v: reactive %.1f ms, best %s %.1f ms (x%.2f, %.1f standard errors)",
		g.UserRTT, g.ClusterRTT, g.Interarrival, g.Service, ms(g.Reactive), g.Best, ms(g.BestMean), g.Ratio, g.Z)
}

// Summarize writes how close the reactive lock came to the best fixed kind
// over gaps: at how many points within 10%, at how many over it by two
// standard errors or more, each point over 10%, and the worst.
func Summarize(w io.Writer, gaps []ReactiveGap) {
	within, clear := 0, 0
	worst := ReactiveGap{}
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
	fmt.Fprintf(w, "reactive lock within 10%% of the best fixed kind at %d of %d points; over it by two standard errors or more at %d\n", within, len(gaps), clear)
	for _, g := range gaps {
		if g.Ratio > 1.10 {
			fmt.Fprintf(w, "  over: %s\n", g)
		}
	}
	if len(gaps) > 0 {
		fmt.Fprintf(w, "worst: %s\n", worst)
	}
}

// kindsOf returns the kinds in rs, in first-seen order.
func kindsOf(rs []Result) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}
