package render

import (
	"bufio"
	"fmt"
	"io"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Text writes f as a summary followed by each tree as an indented outline,
// each server tagged with its color:
//
//	forest 3-3: 7 servers, groups [3 2 2], disjoint
//	tree 0: root 1, height 2
//	1 [0]
//	├── 4 [0]
//	│   └── 3 [2]
//	...
func Text(w io.Writer, f *forest.Forest) error {
	if f.Len() == 0 {
		return ErrEmpty
	}
	bw := bufio.NewWriter(w)
	cfg := f.Config()
	shape := "disjoint"
	if !cfg.Disjoint(f.Len()) {
		shape = "not disjoint (some tree's group cannot hold all others below it)"
	}
	fmt.Fprintf(bw, "forest %s: %d servers, groups %v, %s\n", cfg, f.Len(), f.GroupSizes(), shape)
	for k := range cfg.Trees {
		color := forest.Color(k)
		root, _ := f.Root(color)
		fmt.Fprintf(bw, "tree %d: root %d, height %d\n", k, root, f.TreeHeight(color))
		writeSubtree(bw, f, color, root, "", "")
	}
	return bw.Flush()
}

// writeSubtree prints id with the given line prefix, then its children with
// childPrefix extended by box-drawing guides.
func writeSubtree(w *bufio.Writer, f *forest.Forest, k forest.Color, id forest.ServerID, prefix, childPrefix string) {
	c, _ := f.Color(id)
	fmt.Fprintf(w, "%s%d [%d]\n", prefix, id, c)
	kids := f.Children(k, id)
	for i, ch := range kids {
		if i == len(kids)-1 {
			writeSubtree(w, f, k, ch, childPrefix+"└── ", childPrefix+"    ")
		} else {
			writeSubtree(w, f, k, ch, childPrefix+"├── ", childPrefix+"│   ")
		}
	}
}
