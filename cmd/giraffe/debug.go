package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/corrupt"
)

func newDebugCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "debug",
		Short: "Tools for tests and demonstrations that change a stopped server's files",
	}
	cmd.AddCommand(newDebugCorruptCmd())
	return cmd
}

func newDebugCorruptCmd() *cobra.Command {
	var (
		o       corrupt.Options
		target  string
		jsonOut bool
	)
	cmd := &cobra.Command{
		Use:   "corrupt --data-dir D --namespace NAME --target snapshot|log",
		Short: "Flip bytes inside one namespace's newest snapshot or log data, on purpose",
		Long: `corrupt damages a stopped server's data directory on purpose, for tests and
demonstrations of what damage in one namespace does to the others. With
--target snapshot it flips bytes in the newest valid snapshot, inside the
znode of /NAME (or under it) written last: in its data when it has at least
--bytes of them, else anywhere in its record. With --target log it flips
bytes in the payload of the newest log record whose transaction writes
under /NAME. The files' framing stays intact: the snapshot's header and
trailer, the record's header, whose checksum still holds.

D is a standalone server's or an ensemble member's data directory, or a
member's replica directory. It refuses to run while a server holds D's log.
The line printed names the file, the offsets of the flipped bytes, and the
znode (snapshot) or the record's zxid and paths (log). --seed makes the
choice of bytes repeatable; without it a random seed is used and printed.
docs/storage.md describes what it changes.`,
		Example: `  giraffe debug corrupt --data-dir /tmp/g1 --namespace 2 --target log --seed 7
  giraffe debug corrupt --data-dir /tmp/g1 --namespace 2 --target snapshot --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Target = corrupt.Target(target)
			if !cmd.Flags().Changed("seed") {
				o.Seed = rand.Uint64() >> 1
			}
			rep, err := corrupt.Run(o)
			if err != nil {
				return err
			}
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			fmt.Fprintln(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DataDir, "data-dir", "", "the stopped server's data directory (dataDir), or a member's replica directory")
	f.StringVar(&o.Namespace, "namespace", "", "the namespace to damage: its root is /NAME")
	f.StringVar(&target, "target", "", "what to damage: snapshot or log")
	f.IntVar(&o.Bytes, "bytes", corrupt.DefaultBytes, "how many bytes to flip")
	f.Uint64Var(&o.Seed, "seed", 0, "chooses the bytes and how they change (default: random, printed)")
	f.BoolVar(&jsonOut, "json", false, "print the report as a JSON object")
	for _, name := range []string{"data-dir", "namespace", "target"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}
