// Command giraffe-lab holds the tools that study Giraffe rather than run
// it: the deterministic simulator of Group Paxos (sim, with its calibrated
// benchmarks and the calibration itself), the simulator's benchmark sweep
// with its plots (simbench), the lock experiments of The Cost of
// Consensus on a local ensemble (primitives), and the tables and plots of
// measurements made elsewhere (hctable, nsfigures). Keeping them out of the
// giraffe binary keeps the simulator, the linearizability checker and the
// plotting library out of the server.
package main

import (
	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/cli"
	"github.com/giraffe-coord/giraffe/sim"
)

func main() {
	sim.LightGC()
	root := &cobra.Command{
		Use:   "giraffe-lab",
		Short: "Giraffe's laboratory: the simulator, its benchmarks and the lock experiments",
	}
	root.AddCommand(newSimCmd(), newSimBenchCmd(), newPrimitivesCmd(), newHCTableCmd(), newNSFiguresCmd(), newCostModelCmd())
	cli.Run(root)
}
