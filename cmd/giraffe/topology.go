package main

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/forest/render"
)

// maxTopologyNodes bounds --nodes: the forest handles more, but a picture or
// outline of more servers than this is no use to anyone.
const maxTopologyNodes = 100000

func newTopologyCmd() *cobra.Command {
	var (
		nodes, trees, children int
		remove                 []uint
		seed                   uint64
		format                 string
	)
	cmd := &cobra.Command{
		Use:   "topology",
		Short: "Print the interior-node-disjoint forest of N servers (text, JSON or SVG)",
		Long: `Build the forest that N servers form (the Giraffe paper, Algorithms 1 and 2) and print it.

Servers 1..N join one after the other, then the servers of --remove leave in
the order given. Each join takes the color of the smallest group, so the join
order decides who ends up in which group: with --seed 0 (the default) the
servers join in id order 1, 2, ..., N; with any other seed they join in a
permutation of 1..N drawn from that seed (the same seed always gives the same
order and the same forest). The forest itself involves no randomness.

--trees is t (number of trees, colors, groups) and --children is c (most
children of a server in one tree); classic mode, a star, is --trees 1
--children N-1.

Formats:
  text  a summary line, then each tree as an outline; "id [color]" per server
  json  {"trees":T,"children":C,"nodes":[{"id":int,"color":int}],
         "forest":[{"color":int,"root":int,"edges":[[parent,child],...]}]}
  svg   the trees side by side, servers colored by group, heavy outline on
        servers that have children in that tree`,
		Example: `  giraffe topology --nodes 27 --trees 3 --children 3
  giraffe topology --nodes 100 --trees 9 --children 9 --format svg > forest.svg
  giraffe topology --nodes 40 --trees 3 --children 5 --remove 1,7 --seed 42 --format json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			write, ok := map[string]func(io.Writer, *forest.Forest) error{
				"text": render.Text, "json": render.JSON, "svg": render.SVG}[format]
			if !ok {
				return fmt.Errorf("--format must be text, json or svg, got %q", format)
			}
			if nodes < 1 || nodes > maxTopologyNodes {
				return fmt.Errorf("--nodes must be in [1,%d], got %d", maxTopologyNodes, nodes)
			}
			f, err := forest.New(forest.Config{Trees: trees, MaxChildren: children})
			if err != nil {
				return err
			}
			order := make([]forest.ServerID, nodes)
			for i := range order {
				order[i] = forest.ServerID(i + 1)
			}
			if seed != 0 {
				rng := rand.New(rand.NewPCG(seed, 0))
				rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			}
			for _, id := range order {
				if _, err := f.Join(id, ""); err != nil {
					return err
				}
			}
			for _, id := range remove {
				if id >= uint(forest.None) {
					return fmt.Errorf("--remove %d: not a server id", id)
				}
				if _, err := f.Leave(forest.ServerID(id)); err != nil {
					return fmt.Errorf("--remove %d: %w", id, err)
				}
			}
			return write(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&nodes, "nodes", 0, "number of servers N (ids 1..N)")
	fl.IntVar(&trees, "trees", 3, "number of trees t (colors, groups)")
	fl.IntVar(&children, "children", 3, "most children c of a server in one tree")
	fl.UintSliceVar(&remove, "remove", nil, "ids of servers that leave after the joins, in this order (comma-separated)")
	fl.Uint64Var(&seed, "seed", 0, "0: join in id order; otherwise join in the permutation of 1..N this seed draws")
	fl.StringVar(&format, "format", "text", "output format: text, json or svg")
	_ = cmd.MarkFlagRequired("nodes")
	return cmd
}
