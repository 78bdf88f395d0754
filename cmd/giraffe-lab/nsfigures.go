package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	// Aliased: simbench.go has a function named bench.
	gbench "github.com/giraffe-coord/giraffe/bench"
)

// nsSystems are the systems scripts/bench-ns-figures.sh compares, in the
// order the tables and plots show them.
var nsSystems = []string{"off", "dynamicfsync", "shortcircuit", "doublegiraffe", "doublezk"}

// nsRun is one line of the results.jsonl that scripts/bench-ns-figures.sh
// writes: giraffe bench ns's JSON tagged with the system and the mix, or
// a failed run's message.
type nsRun struct {
	System        string  `json:"system"`
	StrongClients int     `json:"strong_clients"`
	WeakClients   int     `json:"weak_clients"`
	ElapsedS      float64 `json:"elapsed_s"` // the configuration's wall time, start to stop
	Failed        string  `json:"failed"`
	gbench.NSResult
}

// nsMix is a number of strong and of weak clients.
type nsMix struct{ strong, weak int }

func (m nsMix) String() string { return fmt.Sprintf("%d/%d", m.strong, m.weak) }

// nsCell is what the runs of one system, write ratio and mix measured for
// one class: the means pool every run's requests.
type nsCell struct {
	writes, ops      int64
	writeSum, opsSum float64 // latency sums, ms
	runs, failedRuns int
}

// add pools one class's result of a run into c.
func (c *nsCell) add(r gbench.ClassResult) {
	if r.Clients == 0 {
		return
	}
	c.writes += r.Writes
	c.ops += r.Ops
	c.writeSum += r.WriteMeanMs * float64(r.Writes)
	c.opsSum += r.WriteMeanMs*float64(r.Writes) + r.ReadMeanMs*float64(r.Reads)
}

// writeMean and mean are the pooled means of writes and of every
// request; ok is false when no run measured one.
func (c *nsCell) writeMean() (float64, bool) {
	if c.writes == 0 {
		return 0, false
	}
	return c.writeSum / float64(c.writes), true
}

func (c *nsCell) mean() (float64, bool) {
	if c.ops == 0 {
		return 0, false
	}
	return c.opsSum / float64(c.ops), true
}

// nsKey names a cell.
type nsKey struct {
	system string
	ratio  float64
	mix    nsMix
	class  string
}

// nsFigures is every run of a results directory, pooled per cell.
type nsFigures struct {
	cells   map[nsKey]*nsCell
	systems []string
	ratios  []float64
	mixes   []nsMix
	failed  []nsRun
}

// readNSRuns reads results.jsonl.
func readNSRuns(path string) ([]nsRun, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []nsRun
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r nsRun
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if r.System == "" {
			return nil, fmt.Errorf("%s:%d: no system", path, n)
		}
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

// poolNSRuns groups runs by system, write ratio and mix, in the paper's
// orders: ratios from all writes down, mixes from all strong to all weak.
func poolNSRuns(runs []nsRun) *nsFigures {
	fig := &nsFigures{cells: map[nsKey]*nsCell{}}
	cell := func(k nsKey) *nsCell {
		if fig.cells[k] == nil {
			fig.cells[k] = &nsCell{}
		}
		return fig.cells[k]
	}
	for _, r := range runs {
		m := nsMix{r.StrongClients, r.WeakClients}
		if !slices.Contains(fig.systems, r.System) {
			fig.systems = append(fig.systems, r.System)
		}
		if !slices.Contains(fig.ratios, r.WriteRatio) {
			fig.ratios = append(fig.ratios, r.WriteRatio)
		}
		if !slices.Contains(fig.mixes, m) {
			fig.mixes = append(fig.mixes, m)
		}
		strong := cell(nsKey{r.System, r.WriteRatio, m, gbench.ClassStrong})
		weak := cell(nsKey{r.System, r.WriteRatio, m, gbench.ClassWeak})
		if r.Failed != "" {
			strong.failedRuns++
			weak.failedRuns++
			fig.failed = append(fig.failed, r)
			continue
		}
		strong.runs++
		weak.runs++
		strong.add(r.Strong)
		weak.add(r.Weak)
	}
	rank := func(s string) int {
		if i := slices.Index(nsSystems, s); i >= 0 {
			return i
		}
		return len(nsSystems)
	}
	slices.SortStableFunc(fig.systems, func(a, b string) int { return rank(a) - rank(b) })
	slices.SortFunc(fig.ratios, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	slices.SortFunc(fig.mixes, func(a, b nsMix) int {
		if a.strong != b.strong {
			return b.strong - a.strong
		}
		return a.weak - b.weak
	})
	return fig
}

// percent writes a write ratio as the paper does ("100% writes").
func percent(ratio float64) string { return fmt.Sprintf("%.0f%%", 100*ratio) }

// markdown writes, per write ratio, the table of write latency means (a
// cell per system: strong / weak) and, when there are reads, the table of
// every request's mean; then the failed runs.
func (fig *nsFigures) markdown(w io.Writer) {
	table := func(ratio float64, title string, value func(*nsCell) (float64, bool)) {
		fmt.Fprintf(w, "**%s writes: %s, ms (strong / weak clients)**\n\n", percent(ratio), title)
		fmt.Fprintf(w, "| strong/weak clients | %s |\n", strings.Join(fig.systems, " | "))
		fmt.Fprintf(w, "|---|%s\n", strings.Repeat("---|", len(fig.systems)))
		for _, m := range fig.mixes {
			row := []string{m.String()}
			for _, sys := range fig.systems {
				strong, weak := fig.cells[nsKey{sys, ratio, m, gbench.ClassStrong}], fig.cells[nsKey{sys, ratio, m, gbench.ClassWeak}]
				var cell string
				switch {
				case strong == nil: // not run
				case strong.runs == 0:
					cell = "failed"
				default:
					cell = fmt.Sprintf("%s / %s", ms(value(strong)), ms(value(weak)))
					if strong.failedRuns > 0 {
						cell += fmt.Sprintf(" (%d failed)", strong.failedRuns)
					}
				}
				row = append(row, cell)
			}
			fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
		}
		fmt.Fprintln(w)
	}
	for _, ratio := range fig.ratios {
		table(ratio, "write latency mean", (*nsCell).writeMean)
		if ratio < 1 {
			table(ratio, "latency mean of every request (writes and reads)", (*nsCell).mean)
		}
	}
	for _, r := range fig.failed {
		msg := strings.TrimSpace(r.Failed)
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the last line says what ended the run
		}
		fmt.Fprintf(w, "- failed: %s, %s writes, %d/%d: %s\n", r.System, percent(r.WriteRatio),
			r.StrongClients, r.WeakClients, msg)
	}
}

// ms writes a latency, or a dash when there is none (no client of the
// class, or no request of the kind).
func ms(v float64, ok bool) string {
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.2f", v)
}

// plotName is the file of a write ratio's plot.
func plotName(ratio float64) string { return fmt.Sprintf("ns-figures-write%.0f.png", 100*ratio) }

// plot draws a write ratio's figure as the paper's Figures 7-10: x the
// mix, y the mean latency of the class's requests (writes and reads, as
// the paper's figures measure), a line per system and class, strong ones
// solid, weak ones dashed, a colour per system.
func (fig *nsFigures) plot(ratio float64, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Mean request latency, %s writes, classic-3 ensembles, fsync on", percent(ratio))
	p.X.Label.Text = "strong / weak clients"
	p.Y.Label.Text = "mean latency (ms)"
	p.Add(plotter.NewGrid())
	var names []string
	for _, m := range fig.mixes {
		names = append(names, m.String())
	}
	top := 0.0
	for i, sys := range fig.systems {
		for _, class := range []string{gbench.ClassStrong, gbench.ClassWeak} {
			var xys plotter.XYs
			for x, m := range fig.mixes {
				if c := fig.cells[nsKey{sys, ratio, m, class}]; c != nil {
					if v, ok := c.mean(); ok {
						xys = append(xys, plotter.XY{X: float64(x), Y: v})
						top = max(top, v)
					}
				}
			}
			if len(xys) == 0 {
				continue
			}
			l, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return err
			}
			color := plotutil.Color(i)
			l.Color, pts.Color = color, color
			l.Width = vg.Points(1.5)
			pts.Shape = plotutil.Shape(i)
			if class == gbench.ClassWeak {
				l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				pts.Shape = draw.CrossGlyph{}
			}
			p.Add(l, pts)
			p.Legend.Add(sys+" "+class, l, pts)
		}
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(fig.mixes))-0.5
	// Room above the highest line for the legend.
	p.Y.Min, p.Y.Max = 0, max(top, 1)*1.8
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	// 150 dpi rather than Save's 96: the plots are read in docs/img.
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(8*vg.Inch, 5*vg.Inch), vgimg.UseDPI(150))}
	p.Draw(draw.New(c))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// newNSFiguresCmd returns `giraffe-lab nsfigures`: the tables and plots
// of Figures 7-10 of Performance and Reliability Isolation in ZooKeeper
// from the results of scripts/bench-ns-figures.sh.
func newNSFiguresCmd() *cobra.Command {
	var docs bool
	cmd := &cobra.Command{
		Use:   "nsfigures DIR",
		Short: "Tables and plots of the namespace paper's Figures 7-10 from scripts/bench-ns-figures.sh's results",
		Long: `nsfigures reads DIR/results.jsonl, which scripts/bench-ns-figures.sh writes
(one line per run: giraffe bench ns's JSON tagged with the system and the
mix, or a failed run), pools the runs of each system, write ratio and mix,
and prints per write ratio a Markdown table of the write latency means
(rows the mixes, a column per system, strong / weak) and, when there are
reads, one of every request's mean; it writes the tables to
DIR/figures.md and a plot per write ratio like the paper's Figures 7-10
(x the mix, y the mean request latency, a line per system and class) to
DIR/ns-figures-write<percent>.png, and with --docs to docs/img/ too.`,
		Example: `  giraffe-lab nsfigures /tmp/nsfig
  giraffe-lab nsfigures --docs /tmp/nsfig   # from the repository's root`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			runs, err := readNSRuns(filepath.Join(dir, "results.jsonl"))
			if err != nil {
				return err
			}
			if len(runs) == 0 {
				return fmt.Errorf("%s: no runs", dir)
			}
			fig := poolNSRuns(runs)
			var md strings.Builder
			fig.markdown(&md)
			fmt.Fprint(cmd.OutOrStdout(), md.String())
			if err := os.WriteFile(filepath.Join(dir, "figures.md"), []byte(md.String()), 0o644); err != nil {
				return err
			}
			dirs := []string{dir}
			if docs {
				if _, err := os.Stat(filepath.Join("docs", "img")); err != nil {
					return fmt.Errorf("--docs: run from the repository's root: %w", err)
				}
				dirs = append(dirs, filepath.Join("docs", "img"))
			}
			for _, ratio := range fig.ratios {
				for _, d := range dirs {
					if err := fig.plot(ratio, filepath.Join(d, plotName(ratio))); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&docs, "docs", false, "also write the plots to docs/img/")
	return cmd
}
