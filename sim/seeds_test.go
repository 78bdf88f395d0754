package sim

import (
	"fmt"
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

// seedChunk is how many seeds of one topology run one after the other in
// one parallel subtest of TestSeeds: the big topologies cost many times
// what the small ones do, and chunks let the cores share them out.
const seedChunk = 10

// TestSeeds is the seed sweep: SIM_SEEDS seeds (default 20) per topology
// starting at SIM_SEED_BASE (default 1), half of them in swarm mode; chunks
// of seedChunk seeds run in parallel, the biggest topology's first.
// `make test` runs it with SIM_SEEDS=125 (500 runs, in test-sim; its
// test-go step sets SIM_SEEDS=0), `make sim-long` with SIM_SEEDS=25000.
// SIM_RECONFIG=1 adds configuration changes to every run (`make
// sim-reconfig`).
func TestSeeds(t *testing.T) {
	n := int64(20)
	if v, err := strconv.ParseInt(os.Getenv("SIM_SEEDS"), 10, 64); err == nil {
		n = v
	}
	base := int64(1)
	if v, err := strconv.ParseInt(os.Getenv("SIM_SEED_BASE"), 10, 64); err == nil {
		base = v
	}
	reconfig := os.Getenv("SIM_RECONFIG") != ""
	for k := len(sweepTopologies) - 1; k >= 0; k-- {
		tp := sweepTopologies[k]
		t.Run(tp.name, func(t *testing.T) {
			t.Parallel()
			for from := int64(0); from < n; from += seedChunk {
				to := min(from+seedChunk, n)
				t.Run(fmt.Sprintf("seeds-%d-%d", base+from, base+to-1), func(t *testing.T) {
					t.Parallel()
					for i := from; i < to; i++ {
						runOpts(t, tp, Options{Seed: base + i, Swarm: i%2 == 1, Reconfig: reconfig})
					}
				})
			}
		})
	}
}
