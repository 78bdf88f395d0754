package sim

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// topology is one ensemble shape the seed sweep covers.
type topology struct {
	name                   string
	nodes, trees, children int
	classic                bool
}

var sweepTopologies = []topology{
	{"classic-3", 3, 1, 2, true},
	{"forest-9-3-3", 9, 3, 3, false},
	{"forest-27-3-3", 27, 3, 3, false},
	{"forest-50-5-10", 50, 5, 10, false},
}

// runOpts runs one seed of tp with o's other options and fails with the
// command that replays it.
func runOpts(t *testing.T, tp topology, o Options) {
	t.Helper()
	o.Nodes, o.Trees, o.Children, o.Classic = tp.nodes, tp.trees, tp.children, tp.classic
	r := Run(o, nil, false)
	if !r.OK {
		t.Fatalf("%s seed %d swarm=%v: %s: %s\nreplay: giraffe-lab sim --seed %d --nodes %d --trees %d --children %d --classic=%v --swarm=%v --max-batch %d --reconfig=%v --no-reconfig=%v --disk-faults=%v --without=%s -v",
			tp.name, o.Seed, o.Swarm, r.Kind, r.Failure, o.Seed, tp.nodes, tp.trees, tp.children, tp.classic, o.Swarm, o.MaxBatch, o.Reconfig, o.NoReconfig, o.DiskFaults, strings.Join(o.Without, ","))
	}
}

// TestSeeds is the seed sweep: SIM_SEEDS seeds (default 20) per topology
// starting at SIM_SEED_BASE (default 1), half of them in swarm mode; the
// topologies run in parallel. `make test` runs it with SIM_SEEDS=125 (500
// runs), `make sim-long` with SIM_SEEDS=25000. SIM_RECONFIG=1 adds
// configuration changes to every run (`make sim-reconfig`).
func TestSeeds(t *testing.T) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("SIM_SEEDS")); err == nil {
		n = v
	}
	base := int64(1)
	if v, err := strconv.ParseInt(os.Getenv("SIM_SEED_BASE"), 10, 64); err == nil {
		base = v
	}
	reconfig := os.Getenv("SIM_RECONFIG") != ""
	for _, tp := range sweepTopologies {
		tp := tp
		t.Run(tp.name, func(t *testing.T) {
			t.Parallel()
			for i := int64(0); i < int64(n); i++ {
				runOpts(t, tp, Options{Seed: base + i, Swarm: i%2 == 1, Reconfig: reconfig})
			}
		})
	}
}
