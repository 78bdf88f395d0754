package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// build makes the forest `giraffe topology` prints: n joins (in id order, or
// shuffled by seed), then the removals.
func build(t testing.TB, cfg forest.Config, n int, seed uint64, remove []forest.ServerID) *forest.Forest {
	t.Helper()
	f, err := forest.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	order := make([]forest.ServerID, n)
	for i := range order {
		order[i] = forest.ServerID(i + 1)
	}
	if seed != 0 {
		rand.New(rand.NewPCG(seed, 0)).Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
	}
	for _, id := range order {
		if _, err := f.Join(id, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range remove {
		if _, err := f.Leave(id); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// checkDocument is an independent checker of the JSON schema and of the
// forest's invariants: it knows nothing of the forest package beyond the
// document (it parses generic JSON numbers and recomputes everything).
func checkDocument(data []byte) error {
	var doc struct {
		Trees    *int `json:"trees"`
		Children *int `json:"children"`
		Nodes    []struct {
			ID    *int64 `json:"id"`
			Color *int   `json:"color"`
		} `json:"nodes"`
		Forest []struct {
			Color *int       `json:"color"`
			Root  *int64     `json:"root"`
			Edges [][2]int64 `json:"edges"`
		} `json:"forest"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	if doc.Trees == nil || doc.Children == nil || *doc.Trees < 1 || *doc.Children < 1 {
		return errors.New("trees and children must be positive")
	}
	t, c := *doc.Trees, *doc.Children
	n := len(doc.Nodes)
	color := make(map[int64]int, n)
	groups := make([]int, t)
	for _, nd := range doc.Nodes {
		if nd.ID == nil || nd.Color == nil {
			return errors.New("node without id or color")
		}
		if _, dup := color[*nd.ID]; dup {
			return fmt.Errorf("node %d listed twice", *nd.ID)
		}
		if *nd.Color < 0 || *nd.Color >= t {
			return fmt.Errorf("node %d has color %d", *nd.ID, *nd.Color)
		}
		color[*nd.ID] = *nd.Color
		groups[*nd.Color]++
	}
	lo, hi := n, 0
	for _, g := range groups {
		lo, hi = min(lo, g), max(hi, g)
	}
	if hi-lo > 1 {
		return fmt.Errorf("group sizes %v differ by more than one", groups)
	}
	if len(doc.Forest) != t {
		return fmt.Errorf("%d trees listed, want %d", len(doc.Forest), t)
	}
	// Disjointness is possible exactly when the smallest group can hold
	// every other server below itself.
	disjoint := n <= 1 || (n/t)*c >= n-1
	interiorIn := make(map[int64]int)
	for i, tr := range doc.Forest {
		if tr.Color == nil || *tr.Color != i || tr.Root == nil {
			return fmt.Errorf("tree %d: missing or misplaced color/root", i)
		}
		root := *tr.Root
		if _, ok := color[root]; !ok {
			return fmt.Errorf("tree %d: root %d is not a node", i, root)
		}
		if groups[i] > 0 && color[root] != i {
			return fmt.Errorf("tree %d: root %d has color %d", i, root, color[root])
		}
		if len(tr.Edges) != n-1 {
			return fmt.Errorf("tree %d: %d edges for %d nodes", i, len(tr.Edges), n)
		}
		parent := map[int64]int64{}
		kids := map[int64]int{}
		depth := map[int64]int{root: 0}
		for _, e := range tr.Edges {
			p, ch := e[0], e[1]
			if _, ok := color[p]; !ok {
				return fmt.Errorf("tree %d: parent %d is not a node", i, p)
			}
			if _, ok := color[ch]; !ok {
				return fmt.Errorf("tree %d: child %d is not a node", i, ch)
			}
			if ch == root {
				return fmt.Errorf("tree %d: the root has a parent", i)
			}
			if _, dup := parent[ch]; dup {
				return fmt.Errorf("tree %d: node %d has two parents", i, ch)
			}
			// Edges come in breadth-first order, so a parent has been
			// reached before its children: this also proves acyclic and
			// connected once all n-1 edges are read.
			d, ok := depth[p]
			if !ok {
				return fmt.Errorf("tree %d: edge %d->%d before %d is reached", i, p, ch, p)
			}
			parent[ch] = p
			depth[ch] = d + 1
			kids[p]++
			if kids[p] > c {
				return fmt.Errorf("tree %d: node %d has more than %d children", i, p, c)
			}
		}
		if len(depth) != n {
			return fmt.Errorf("tree %d reaches %d of %d nodes", i, len(depth), n)
		}
		height := 0
		for _, d := range depth {
			height = max(height, d)
		}
		for p := range kids {
			interiorIn[p]++
			if color[p] != i && disjoint {
				return fmt.Errorf("tree %d: node %d of color %d has children although %d nodes fit %d-%d disjointly", i, p, color[p], n, t, c)
			}
		}
		// Height: the group as a complete c-ary tree, plus a level of
		// foreign leaves, plus one level of overflow when the group
		// cannot hold everyone (only promised for n >= t and t <= c).
		if n >= t && t <= c && n > 1 {
			g := groups[i]
			coreDepth, capacity, level := 0, 1, 1
			for capacity < g {
				level *= c
				capacity += level
				coreDepth++
			}
			bound := coreDepth
			if n > g {
				bound++ // foreign leaves below the core
			}
			if n-1 > c*g {
				bound++
			}
			if height > bound {
				return fmt.Errorf("tree %d: height %d above the bound %d for a group of %d", i, height, bound, g)
			}
		}
	}
	if n >= t && t <= c {
		for id, k := range interiorIn {
			if k > 2 {
				return fmt.Errorf("node %d is interior in %d trees", id, k)
			}
		}
	}
	return nil
}

func TestJSONSatisfiesInvariants(t *testing.T) {
	shapes := []forest.Config{{Trees: 1, MaxChildren: 999}, {Trees: 3, MaxChildren: 3}, {Trees: 3, MaxChildren: 5}, {Trees: 5, MaxChildren: 10}, {Trees: 9, MaxChildren: 9}}
	sizes := []int{50, 93, 99, 100, 101, 105, 250, 500, 818, 819, 820, 999, 1000}
	for n := 1; n <= 40; n++ {
		sizes = append(sizes, n)
	}
	if testing.Short() {
		sizes = []int{1, 2, 5, 27, 100, 1000}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, cfg := range shapes {
		for _, n := range sizes {
			for _, seed := range []uint64{0, uint64(n)} {
				var remove []forest.ServerID
				if seed != 0 && n > 2 {
					for _, i := range rng.Perm(n)[:rng.IntN(n/2+1)] {
						remove = append(remove, forest.ServerID(i+1))
					}
					if len(remove) == n {
						remove = remove[1:]
					}
				}
				var buf bytes.Buffer
				if err := JSON(&buf, build(t, cfg, n, seed, remove)); err != nil {
					t.Fatal(err)
				}
				if err := checkDocument(buf.Bytes()); err != nil {
					t.Fatalf("%s n=%d seed=%d removed %d: %v", cfg, n, seed, len(remove), err)
				}
			}
		}
	}
}

func TestCheckerCatchesBrokenDocuments(t *testing.T) {
	var buf bytes.Buffer
	if err := JSON(&buf, build(t, forest.Config{Trees: 3, MaxChildren: 3}, 12, 0, nil)); err != nil {
		t.Fatal(err)
	}
	good := buf.String()
	for _, tc := range []struct{ name, from, to string }{
		{"unknown field", `"trees":3`, `"trees":3,"extra":1`},
		{"color out of range", `{"id":1,"color":0}`, `{"id":1,"color":3}`},
		{"unbalanced groups", `{"id":4,"color":0}`, `{"id":4,"color":1}`},
		{"foreign root", `"root":1`, `"root":2`},
		{"cycle", `[1,4]`, `[4,1]`},
	} {
		bad := strings.Replace(good, tc.from, tc.to, 1)
		if bad == good {
			t.Fatalf("%s: substitution %q not found in %s", tc.name, tc.from, good)
		}
		if checkDocument([]byte(bad)) == nil {
			t.Errorf("%s: the checker accepted a broken document", tc.name)
		}
	}
}

func TestText(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, build(t, forest.Config{Trees: 3, MaxChildren: 3}, 7, 0, nil)); err != nil {
		t.Fatal(err)
	}
	want := `forest 3-3: 7 servers, groups [3 2 2], disjoint
tree 0: root 1, height 2
1 [0]
├── 3 [2]
├── 4 [0]
│   ├── 2 [1]
│   ├── 5 [1]
│   └── 6 [2]
└── 7 [0]
tree 1: root 2, height 2
2 [1]
├── 3 [2]
├── 4 [0]
└── 5 [1]
    ├── 1 [0]
    ├── 6 [2]
    └── 7 [0]
tree 2: root 3, height 2
3 [2]
├── 1 [0]
├── 4 [0]
└── 6 [2]
    ├── 2 [1]
    ├── 5 [1]
    └── 7 [0]
`
	if buf.String() != want {
		t.Fatalf("text output:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestSVG(t *testing.T) {
	for _, tc := range []struct {
		cfg forest.Config
		n   int
	}{{forest.Config{Trees: 3, MaxChildren: 3}, 27}, {forest.Config{Trees: 9, MaxChildren: 9}, 100}, {forest.Config{Trees: 1, MaxChildren: 5}, 1}, {forest.Config{Trees: 12, MaxChildren: 12}, 30}} {
		f := build(t, tc.cfg, tc.n, 0, nil)
		var a, b bytes.Buffer
		if err := SVG(&a, f); err != nil {
			t.Fatal(err)
		}
		if err := SVG(&b, f); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatal("two renders of the same forest differ")
		}
		// Well-formed XML, one group per tree, each with a circle per
		// server and a line per edge, and nothing drawn at NaN.
		if strings.Contains(a.String(), "NaN") {
			t.Fatalf("%s n=%d: NaN in the picture", tc.cfg, tc.n)
		}
		dec := xml.NewDecoder(&a)
		groups, circles, lines := 0, 0, 0
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s n=%d: not well-formed: %v", tc.cfg, tc.n, err)
			}
			if se, ok := tok.(xml.StartElement); ok {
				switch se.Name.Local {
				case "g":
					groups++
				case "circle":
					circles++
				case "line":
					lines++
				}
			}
		}
		legend := tc.cfg.Trees
		if groups != tc.cfg.Trees || circles != tc.cfg.Trees*tc.n+legend || lines != tc.cfg.Trees*(tc.n-1) {
			t.Fatalf("%s n=%d: %d groups, %d circles, %d lines", tc.cfg, tc.n, groups, circles, lines)
		}
	}
}

func TestEmptyForest(t *testing.T) {
	f, _ := forest.New(forest.Config{Trees: 2, MaxChildren: 2})
	for _, fn := range []func(io.Writer, *forest.Forest) error{Text, JSON, SVG} {
		if err := fn(io.Discard, f); !errors.Is(err, ErrEmpty) {
			t.Errorf("render of an empty forest: %v", err)
		}
	}
}
