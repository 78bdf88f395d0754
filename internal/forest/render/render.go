// Package render draws a forest.Forest for people and tools: an indented
// text outline, a JSON document (the schema of `giraffe topology`), and an
// SVG picture with the trees side by side and servers colored by group. It
// reads the forest only through its exported API.
package render

import (
	"encoding/json"
	"errors"
	"io"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// Document is the JSON form of a forest:
//
//	{"trees":T,"children":C,"nodes":[{"id":int,"color":int}],
//	 "forest":[{"color":int,"root":int,"edges":[[parent,child],...]}]}
//
// Nodes are in ascending id order; trees in color order; each tree's edges
// in breadth-first order from its root, children in ascending id order, so a
// reader can rebuild every tree in one pass.
type Document struct {
	Trees    int    `json:"trees"`
	Children int    `json:"children"`
	Nodes    []Node `json:"nodes"`
	Forest   []Tree `json:"forest"`
}

// Node is one server and its color (group).
type Node struct {
	ID    forest.ServerID `json:"id"`
	Color forest.Color    `json:"color"`
}

// Tree is one tree: its color, root and parent→child edges.
type Tree struct {
	Color forest.Color         `json:"color"`
	Root  forest.ServerID      `json:"root"`
	Edges [][2]forest.ServerID `json:"edges"`
}

// ErrEmpty is returned when asked to render a forest without servers: its
// trees have no roots to show.
var ErrEmpty = errors.New("render: the forest has no servers")

// Build returns the Document of f.
func Build(f *forest.Forest) (Document, error) {
	if f.Len() == 0 {
		return Document{}, ErrEmpty
	}
	cfg := f.Config()
	d := Document{Trees: cfg.Trees, Children: cfg.MaxChildren}
	for _, id := range f.Servers() {
		c, _ := f.Color(id)
		d.Nodes = append(d.Nodes, Node{ID: id, Color: c})
	}
	for k := range cfg.Trees {
		color := forest.Color(k)
		root, _ := f.Root(color)
		t := Tree{Color: color, Root: root, Edges: [][2]forest.ServerID{}}
		for queue := []forest.ServerID{root}; len(queue) > 0; queue = queue[1:] {
			for _, c := range f.Children(color, queue[0]) {
				t.Edges = append(t.Edges, [2]forest.ServerID{queue[0], c})
				queue = append(queue, c)
			}
		}
		d.Forest = append(d.Forest, t)
	}
	return d, nil
}

// JSON writes the Document of f as one line of JSON.
func JSON(w io.Writer, f *forest.Forest) error {
	d, err := Build(f)
	if err != nil {
		return err
	}
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}
