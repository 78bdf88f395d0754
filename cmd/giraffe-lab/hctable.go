package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/giraffe-coord/giraffe/bench/hclocks"
)

// newHCTableCmd returns `giraffe-lab hctable`: Hierarchical Chubby's
// Table 1 from the results of `giraffe bench hc --json`, as Markdown and
// an SVG plot.
func newHCTableCmd() *cobra.Command {
	var svg string
	cmd := &cobra.Command{
		Use:   "hctable FILE...",
		Short: "Hierarchical Chubby's Table 1 from giraffe bench hc --json results: Markdown and an SVG plot",
		Long: `hctable reads the JSON lines that giraffe bench hc --json prints (one per
run), groups them by test and condition (CPU quota per ensemble, loops per
client), prints a Markdown table per condition with the paper's goals checked,
and with --svg draws the mean throughput of every test as bars, a bar per
condition, with every run as a point.`,
		Example: `  giraffe-lab hctable --svg docs/hc/table1.svg docs/hc/table1.jsonl`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			var rs []hclocks.Result
			for _, name := range files {
				f, err := os.Open(name)
				if err != nil {
					return err
				}
				sc := bufio.NewScanner(f)
				for n := 1; sc.Scan(); n++ {
					var r hclocks.Result
					if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
						f.Close()
						return fmt.Errorf("%s:%d: %w", name, n, err)
					}
					if r.Test < 1 || r.Test > len(hclocks.Tests) {
						f.Close()
						return fmt.Errorf("%s:%d: no test %d", name, n, r.Test)
					}
					rs = append(rs, r)
				}
				f.Close()
				if err := sc.Err(); err != nil {
					return err
				}
			}
			cells := hclocks.Summarize(rs)
			hclocks.Markdown(cmd.OutOrStdout(), cells)
			if svg == "" {
				return nil
			}
			return hcPlot(svg, cells)
		},
	}
	cmd.Flags().StringVar(&svg, "svg", "", "write the plot to this file")
	return cmd
}

// hcPlot draws a group of bars per test (one bar per condition, its mean
// throughput) with every run as a point on its bar.
func hcPlot(path string, cells []hclocks.Cell) error {
	var conds []string
	byCond := map[string]map[int]hclocks.Cell{}
	for _, c := range cells {
		k := c.Condition()
		if byCond[k] == nil {
			byCond[k] = map[int]hclocks.Cell{}
			conds = append(conds, k)
		}
		byCond[k][c.Test.Number] = c
	}
	p := plot.New()
	p.Title.Text = "Hierarchical Chubby's Table 1 on Giraffe ensembles"
	p.Y.Label.Text = "operations/s (acquires and releases)"
	p.Add(plotter.NewGrid())
	// Bars are drawn as polygons in data units, so that every run's point
	// can sit on its own bar: test k's group is centred on x = k.
	const groupWidth = 0.8
	width := groupWidth / float64(len(conds))
	var names []string
	for _, t := range hclocks.Tests {
		r, l := "no recruitment", "no locality"
		if t.Recruitment {
			r = "recruitment"
		}
		if t.Locality {
			l = "locality"
		}
		names = append(names, fmt.Sprintf("test %d\n%s\n%s", t.Number, r, l))
	}
	for i, cond := range conds {
		color := plotutil.Color(i)
		var runs plotter.XYs
		var legend *plotter.Polygon
		for k, t := range hclocks.Tests {
			c, ok := byCond[cond][t.Number]
			if !ok {
				continue
			}
			x := float64(k) - groupWidth/2 + width*(float64(i)+0.5)
			bar, err := plotter.NewPolygon(plotter.XYs{{X: x - width/2, Y: 0}, {X: x + width/2, Y: 0},
				{X: x + width/2, Y: c.Mean}, {X: x - width/2, Y: c.Mean}})
			if err != nil {
				return err
			}
			bar.Color = color
			bar.LineStyle.Width = 0
			p.Add(bar)
			legend = bar
			for _, v := range c.OpsPerSec {
				runs = append(runs, plotter.XY{X: x, Y: v})
			}
		}
		pts, err := plotter.NewScatter(runs)
		if err != nil {
			return err
		}
		pts.Shape = draw.CircleGlyph{}
		pts.Radius = vg.Points(2)
		p.Add(pts)
		if legend != nil {
			p.Legend.Add(cond+" (bar: mean; points: runs)", legend)
		}
	}
	p.NominalX(names...)
	// Room above the tallest bar for the legend.
	p.X.Min, p.X.Max = -0.5, float64(len(hclocks.Tests))-0.5
	p.Y.Min, p.Y.Max = 0, p.Y.Max*1.3
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}
