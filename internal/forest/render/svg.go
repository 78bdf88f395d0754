package render

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Geometry of the picture, in SVG user units (pixels).
const (
	nodeRadius = 9.0  // a server's circle
	nodeGap    = 3.0  // at least this much between neighboring circles on a ring
	minRing    = 34.0 // at least this much between consecutive rings
	margin     = 28.0 // around each tree's panel
	titleSpace = 22.0 // above each panel, for its title
	legendRow  = 18.0 // per line of the legend
)

// palette holds the fills of the first ten groups (Tableau 10, chosen to stay
// distinct for readers with common color-vision deficiencies); further
// groups get hues spread by the golden angle.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func groupFill(c forest.Color) string {
	if int(c) < len(palette) {
		return palette[c]
	}
	return fmt.Sprintf("hsl(%.0f,55%%,62%%)", math.Mod(float64(c)*137.508, 360))
}

type point struct{ x, y float64 }

// radial lays tree k out around its root: depth d on the ring of radius
// d·step; leaves take angular room in inverse proportion to their depth, so
// that every leaf gets the same arc length on its own ring, and a parent
// sits at the middle of its children's angles. It returns each server's
// position relative to the root and the outer radius.
func radial(f *forest.Forest, k forest.Color) (map[forest.ServerID]point, float64) {
	root, _ := f.Root(k)
	// Children in drawing order: the tree's own color first (the interior
	// of a disjoint tree), then foreign servers, each by id.
	kids := func(id forest.ServerID) []forest.ServerID {
		ks := f.Children(k, id)
		slices.SortStableFunc(ks, func(a, b forest.ServerID) int {
			ca, _ := f.Color(a)
			cb, _ := f.Color(b)
			return cmp.Compare(b2i(ca != k), b2i(cb != k))
		})
		return ks
	}
	height := f.TreeHeight(k)
	if height == 0 {
		return map[forest.ServerID]point{root: {}}, 0
	}
	// Total angular weight of the leaves.
	weight := 0.0
	var sum func(id forest.ServerID, d int)
	sum = func(id forest.ServerID, d int) {
		ks := kids(id)
		if len(ks) == 0 {
			weight += 1 / float64(d)
		}
		for _, c := range ks {
			sum(c, d+1)
		}
	}
	sum(root, 0)
	// Every leaf's arc on its own ring is 2π·step/weight.
	step := max(minRing, (2*nodeRadius+nodeGap)*weight/(2*math.Pi))
	angle := make(map[forest.ServerID]float64)
	depth := make(map[forest.ServerID]int)
	acc := 0.0
	var place func(id forest.ServerID, d int)
	place = func(id forest.ServerID, d int) {
		depth[id] = d
		ks := kids(id)
		if len(ks) == 0 {
			w := 1 / float64(d)
			angle[id] = 2 * math.Pi * (acc + w/2) / weight
			acc += w
			return
		}
		for _, c := range ks {
			place(c, d+1)
		}
		angle[id] = (angle[ks[0]] + angle[ks[len(ks)-1]]) / 2
	}
	place(root, 0)
	pos := make(map[forest.ServerID]point, len(angle))
	for id, a := range angle {
		r := float64(depth[id]) * step
		pos[id] = point{r * math.Sin(a), -r * math.Cos(a)}
	}
	pos[root] = point{}
	return pos, float64(height) * step
}

// SVG writes a picture of f: one panel per tree, side by side in rows (all in
// one row up to four trees, otherwise about a square grid), each tree drawn
// radially around its root, every server a circle filled with its group's
// color and labelled with its id. A server with children in the panel's tree
// has a heavy outline, so a disjoint forest shows heavy outlines only in the
// color of each panel. A legend lists the groups.
func SVG(w io.Writer, f *forest.Forest) error {
	if f.Len() == 0 {
		return ErrEmpty
	}
	cfg := f.Config()
	layouts := make([]map[forest.ServerID]point, cfg.Trees)
	outer := 0.0
	for k := range cfg.Trees {
		var r float64
		layouts[k], r = radial(f, forest.Color(k))
		outer = max(outer, r)
	}
	cols := cfg.Trees
	if cols > 4 {
		cols = int(math.Ceil(math.Sqrt(float64(cfg.Trees))))
	}
	rows := (cfg.Trees + cols - 1) / cols
	panel := 2*(outer+nodeRadius) + 2*margin
	legendH := legendRow * float64(2+(cfg.Trees+3)/4)
	width := float64(cols) * panel
	height := titleSpace + float64(rows)*(panel+titleSpace) + legendH

	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica,Arial,sans-serif">`+"\n",
		width, height, width, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	shape := "disjoint"
	if !cfg.Disjoint(f.Len()) {
		shape = "not disjoint"
	}
	fmt.Fprintf(bw, `<text x="%.1f" y="16" font-size="14" font-weight="bold">forest %s: %d servers, groups %v, %s</text>`+"\n",
		margin, cfg, f.Len(), f.GroupSizes(), shape)
	for k := range cfg.Trees {
		color := forest.Color(k)
		root, _ := f.Root(color)
		x0 := float64(k%cols)*panel + panel/2
		y0 := titleSpace + float64(k/cols)*(panel+titleSpace) + titleSpace + panel/2
		fmt.Fprintf(bw, `<g id="tree-%d">`+"\n", k)
		fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="13" text-anchor="middle" fill="%s" font-weight="bold">tree %d (root %d, height %d)</text>`+"\n",
			x0, y0-panel/2+4, darker(groupFill(color)), k, root, f.TreeHeight(color))
		pos := layouts[k]
		ids := f.Servers()
		for _, id := range ids {
			p, ok := f.Parent(color, id)
			if !ok {
				continue
			}
			a, b := pos[p], pos[id]
			fmt.Fprintf(bw, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#9a9a9a" stroke-width="1"/>`+"\n",
				x0+a.x, y0+a.y, x0+b.x, y0+b.y)
		}
		for _, id := range ids {
			c, _ := f.Color(id)
			p := pos[id]
			stroke, sw := "#555555", 0.8
			if f.IsInterior(color, id) {
				stroke, sw = "#111111", 2.4
			}
			fmt.Fprintf(bw, `<circle cx="%.1f" cy="%.1f" r="%.0f" fill="%s" stroke="%s" stroke-width="%.1f"><title>server %d, group %d</title></circle>`+"\n",
				x0+p.x, y0+p.y, nodeRadius, groupFill(c), stroke, sw, id, c)
			fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="%.0f" text-anchor="middle" dominant-baseline="central">%d</text>`+"\n",
				x0+p.x, y0+p.y, labelSize(id), id)
		}
		fmt.Fprintf(bw, "</g>\n")
	}
	ly := titleSpace + float64(rows)*(panel+titleSpace) + legendRow
	fmt.Fprintf(bw, `<text x="%.1f" y="%.1f" font-size="12">fill = group (color) of the server; heavy outline = has children in that tree</text>`+"\n", margin, ly)
	for k, g := range f.GroupSizes() {
		x := margin + float64(k%4)*180
		y := ly + legendRow*float64(1+k/4)
		fmt.Fprintf(bw, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s" stroke="#555555"/><text x="%.1f" y="%.1f" font-size="12" dominant-baseline="central">group %d: %d servers</text>`+"\n",
			x+6, y, groupFill(forest.Color(k)), x+18, y, k, g)
	}
	fmt.Fprintf(bw, "</svg>\n")
	return bw.Flush()
}

// labelSize shrinks the font for long ids so they stay inside the circle.
func labelSize(id forest.ServerID) float64 {
	switch {
	case id < 100:
		return 8
	case id < 1000:
		return 7
	}
	return 5
}

// darker returns a readable title color for a group fill from the palette.
func darker(fill string) string {
	if len(fill) == 7 && fill[0] == '#' {
		var r, g, b int
		if _, err := fmt.Sscanf(fill, "#%02x%02x%02x", &r, &g, &b); err == nil {
			return fmt.Sprintf("#%02x%02x%02x", r*6/10, g*6/10, b*6/10)
		}
	}
	return "#333333"
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
