// Command giraffe is the single binary of Giraffe, a scalable
// ZooKeeper-compatible coordination service: it runs servers, and it holds
// the tools that study and exercise them (topology, simulator, benchmarks).
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:   "giraffe",
		Short: "Giraffe: a scalable coordination service that speaks ZooKeeper's wire protocol",
		Long: `Giraffe is a coordination service (znodes, sessions, ephemeral and sequential
nodes, watches, ACLs, multi) that any ZooKeeper client can use unchanged.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServerCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newTopologyCmd())
	root.AddCommand(newClusterCmd())
	root.AddCommand(newLockCmd())
	root.AddCommand(newLeaveCmd())
	root.AddCommand(newElectCmd())
	root.AddCommand(newShellCmd())
	if err := root.Execute(); err != nil {
		if err != errSilentFailure {
			fmt.Fprintln(os.Stderr, "giraffe:", err)
		}
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
