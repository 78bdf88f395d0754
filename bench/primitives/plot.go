package primitives

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// WritePlot draws e's results as SVG in dir/NAME.svg: for the RTT grid a
// heatmap per kind of the mean latency over user and cluster RTT (seed
// 001's Fig. 10), otherwise mean latency against e.X, a line per kind.
func WritePlot(dir string, e Experiment, rs []Result) (string, error) {
	path := filepath.Join(dir, e.Name+".svg")
	if e.X == "" {
		return path, heatmaps(path, e, rs)
	}
	return path, lines(path, e, rs)
}

// lines is a line plot of mean latency against the varied condition.
func lines(path string, e Experiment, rs []Result) error {
	p := plot.New()
	p.Title.Text = e.Title
	p.X.Label.Text = map[string]string{"service": "time holding the lock, mean (ms)", "user_rtt": "added client-to-server RTT (ms)"}[e.X]
	p.Y.Label.Text = "time to acquire, mean (ms)"
	p.Add(plotter.NewGrid())
	for i, kind := range kindsOf(rs) {
		var xy plotter.XYs
		for _, r := range rs {
			if r.Kind != kind {
				continue
			}
			x := ms(r.Service)
			if e.X == "user_rtt" {
				x = ms(r.UserRTT)
			}
			xy = append(xy, plotter.XY{X: x, Y: ms(r.Mean)})
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		c := plotutil.Color(i)
		l.Color, pts.Color = c, c
		l.Width = vg.Points(1.5)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(kind, l, pts)
	}
	p.Legend.Top, p.Legend.Left = true, true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, path)
}

// grid is one kind's mean latency over user (columns) and cluster (rows)
// RTT, for plotter.HeatMap.
type grid struct {
	users, clusters []float64
	z               map[[2]float64]float64
}

// Dims, X, Y and Z make grid a plotter.GridXYZ.
func (g grid) Dims() (c, r int) { return len(g.users), len(g.clusters) }

// X is the user RTT of column c.
func (g grid) X(c int) float64 { return g.users[c] }

// Y is the cluster RTT of row r.
func (g grid) Y(r int) float64 { return g.clusters[r] }

// Z is the mean latency at (c, r).
func (g grid) Z(c, r int) float64 { return g.z[[2]float64{g.users[c], g.clusters[r]}] }

// heatmaps draws one heatmap per kind side by side, on one color scale.
func heatmaps(path string, e Experiment, rs []Result) error {
	kinds := kindsOf(rs)
	grids := map[string]grid{}
	var all []float64
	for _, kind := range kinds {
		g := grid{z: map[[2]float64]float64{}}
		for _, r := range rs {
			if r.Kind != kind {
				continue
			}
			u, c := ms(r.UserRTT), ms(r.ClusterRTT)
			if !slices.Contains(g.users, u) {
				g.users = append(g.users, u)
			}
			if !slices.Contains(g.clusters, c) {
				g.clusters = append(g.clusters, c)
			}
			g.z[[2]float64{u, c}] = ms(r.Mean)
			all = append(all, ms(r.Mean))
		}
		slices.Sort(g.users)
		slices.Sort(g.clusters)
		grids[kind] = g
	}
	if len(all) == 0 {
		return fmt.Errorf("%s: no results to plot", e.Name)
	}
	lo, hi := slices.Min(all), slices.Max(all)
	if hi <= lo {
		hi = lo + 1
	}
	pal := moreland.SmoothBlueRed()
	pal.SetMin(lo)
	pal.SetMax(hi)
	const w, h = 4 * vg.Inch, 3.6 * vg.Inch
	canvas := vgsvg.New(vg.Length(len(kinds))*w, h)
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 1, Cols: len(kinds)}
	for i, kind := range kinds {
		g := grids[kind]
		p := plot.New()
		p.Title.Text = fmt.Sprintf("%s (mean ms; %.0f to %.0f)", kind, lo, hi)
		p.X.Label.Text = "user RTT (ms)"
		p.Y.Label.Text = "cluster RTT (ms)"
		hm := plotter.NewHeatMap(g, pal.Palette(64))
		hm.Min, hm.Max = lo, hi
		p.Add(hm)
		labels := plotter.XYLabels{}
		for _, u := range g.users {
			for _, c := range g.clusters {
				labels.XYs = append(labels.XYs, plotter.XY{X: u, Y: c})
				labels.Labels = append(labels.Labels, fmt.Sprintf("%.0f", g.z[[2]float64{u, c}]))
			}
		}
		l, err := plotter.NewLabels(labels)
		if err != nil {
			return err
		}
		p.Add(l)
		p.Draw(tiles.At(dc, 0, i))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
