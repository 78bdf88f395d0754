// Command giraffe-lab holds the tools that study Giraffe rather than run
// it: the deterministic simulator of Group Paxos (sim, with its calibrated
// benchmarks and the calibration itself), the simulator's benchmark sweep
// with its plots (simbench), and seed 001's lock experiments on a local
// ensemble (primitives). Keeping them out of the giraffe binary keeps the
// simulator, the linearizability checker and the plotting library out of
// the server.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:           "giraffe-lab",
		Short:         "Giraffe's laboratory: the simulator, its benchmarks and the lock experiments",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSimCmd(), newSimBenchCmd(), newPrimitivesCmd())
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "giraffe-lab:", err)
		os.Exit(exitCode(err))
	}
}

// exitError carries a specific process exit status out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// exitCode returns the status to exit with for err: the code of an
// *exitError, 1 otherwise.
func exitCode(err error) int {
	if e, ok := err.(*exitError); ok {
		return e.code
	}
	return 1
}
