// Command giraffe is Giraffe, a scalable ZooKeeper-compatible coordination
// service: it runs servers and local ensembles, and holds the tools that
// use them (client shell, locks, elections, load generators, the forest's
// topology). The tools that study Giraffe (the simulator and the
// experiments) are giraffe-lab's.
package main

import (
	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/cli"
)

func main() {
	root := &cobra.Command{
		Use:   "giraffe",
		Short: "Giraffe: a scalable coordination service that speaks ZooKeeper's wire protocol",
		Long: `Giraffe is a coordination service (znodes, sessions, ephemeral and sequential
nodes, watches, ACLs, multi) that any ZooKeeper client can use unchanged.`,
		Version: versionLine(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.AddCommand(newServerCmd())
	root.AddCommand(newBenchCmd())
	root.AddCommand(newTopologyCmd())
	root.AddCommand(newClusterCmd())
	root.AddCommand(newLockCmd())
	root.AddCommand(newLeaveCmd())
	root.AddCommand(newElectCmd())
	root.AddCommand(newShellCmd())
	root.AddCommand(newHCCmd())
	root.AddCommand(newVersionCmd())
	root.AddCommand(newNSCmd())
	root.AddCommand(newSnapshotCmd())
	root.AddCommand(newLogCmd())
	root.AddCommand(newDebugCmd())
	cli.Run(root)
}
