package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/buildinfo"
	"github.com/giraffe-coord/giraffe/server"
)

// versionLine is what `giraffe version` and `giraffe --version` print.
func versionLine() string { return "giraffe " + buildinfo.Read().String() }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Giraffe's version, and the ZooKeeper version its servers report",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			fmt.Fprintln(out, versionLine())
			fmt.Fprintf(out, "ZooKeeper protocol: %s (what srvr, mntr and the AdminServer report)\n", server.Version)
			return nil
		},
	}
}
