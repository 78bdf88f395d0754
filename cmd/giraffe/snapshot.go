package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/backup"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/server"
)

func newSnapshotCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Back up a server's data to a snapshot file, inspect one, restore one",
		Long: `snapshot takes a backup of a live server's committed tree (save), describes
and lists a snapshot file offline (status, dump), and makes one the state of
a fresh data directory (restore). docs/operations.md has the procedures.`,
	}
	cmd.AddCommand(newSnapshotSaveCmd(), newSnapshotStatusCmd(), newSnapshotDumpCmd(), newSnapshotRestoreCmd())
	return cmd
}

func newSnapshotSaveCmd() *cobra.Command {
	var (
		servers, tokenFile string
		timeout            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "save --servers HOST:ADMINPORT[,...] --admin-token-file F FILE",
		Short: "Save a snapshot of a live server's committed tree to FILE",
		Long: `save asks a server's admin port for a snapshot (ZooKeeper's snapshot command,
GET /commands/snapshot, with the admin token) and writes it to FILE
atomically: FILE appears, or is replaced, only once the whole snapshot
arrived and its checksum, its tree's digest and its zxid check out. The
snapshot holds every write acknowledged before save began, by any member:
the server takes it at a place in the write order after them, as a
client's sync. The servers are tried in turn until one gives a snapshot; a
standalone server or any ensemble member will do. While none can for now
(not serving, busy) or none is reachable, they are asked again until
--timeout.`,
		Example: `  giraffe snapshot save --servers 127.0.0.1:7001 --admin-token-file /etc/giraffe/admin.token backup.snap`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			token, err := adminapi.ReadTokenFile(tokenFile)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			st, from, err := backup.Save(ctx, adminapi.Client{Token: token}, splitList(servers), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "saved %s from %s: zxid %s, %d znodes, %d bytes, digest %s\n",
				args[0], from, st.Zxid, st.Znodes, st.Bytes, st.Digest)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "", "admin addresses to ask, host:port, comma-separated, tried in turn")
	f.StringVar(&tokenFile, "admin-token-file", "", "file holding the admin token (mode 0600)")
	f.DurationVar(&timeout, "timeout", 5*time.Minute, "give up after this long")
	cmd.MarkFlagRequired("servers")
	cmd.MarkFlagRequired("admin-token-file")
	return cmd
}

func newSnapshotStatusCmd() *cobra.Command {
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "status FILE",
		Short: "Describe a snapshot file: zxid, znodes, digest, size, checksum",
		Long: `status reads a snapshot file offline and checks it whole: the file's
checksum, the tree's own checksum and digest, and that the tree is the state
at the file's zxid. It exits with status 1 if any check fails.`,
		Example: `  giraffe snapshot status backup.snap
  giraffe snapshot status --json backup.snap`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := backup.Inspect(args[0])
			out := cmd.OutOrStdout()
			if jsonOut {
				if jerr := json.NewEncoder(out).Encode(st); jerr != nil {
					return jerr
				}
			} else {
				printSnapshotStatus(out, st)
			}
			return err
		},
	}
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print the status as a JSON object")
	return cmd
}

// printSnapshotStatus prints a snapshot file's status as a table.
// A file that fails a check shows its size only.
func printSnapshotStatus(w io.Writer, st backup.Status) {
	if !st.ChecksumOK {
		fmt.Fprintf(w, "bytes           %d\nchecksum        FAILED\n", st.Bytes)
		return
	}
	fmt.Fprintf(w, "zxid            %s\nznodes          %d\nsessions        %d\ndigest          %s\n",
		st.Zxid, st.Znodes, st.Sessions, st.Digest)
	fmt.Fprintf(w, "bytes           %d\nchecksum        %s OK\nformat version  %d\n", st.Bytes, st.Checksum, st.FormatVersion)
}

func newSnapshotDumpCmd() *cobra.Command {
	var data bool
	cmd := &cobra.Command{
		Use:   "dump FILE",
		Short: "List every znode of a snapshot file with its stat",
		Long: `dump reads a snapshot file offline, checked as status checks it, and prints
every znode, parents before children, one line each: the path, its stat
(zxids, times, versions, ephemeral owner, data length, children) and ACL;
--data adds a line with the data, quoted. The sessions follow.`,
		Example: `  giraffe snapshot dump backup.snap
  giraffe snapshot dump --data backup.snap | less`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return backup.Dump(args[0], cmd.OutOrStdout(), data)
		},
	}
	cmd.Flags().BoolVar(&data, "data", false, "print each znode's data too")
	return cmd
}

func newSnapshotRestoreCmd() *cobra.Command {
	var dataDir, dataLogDir, configFile string
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir D | --config zoo.cfg",
		Short: "Make a snapshot file the state of a new standalone server or ensemble member",
		Long: `restore checks a snapshot file as status does and writes it as the state
of a new data directory, which must be missing or empty but for a myid
file (as must --data-log-dir, when the log is kept elsewhere).

Without server.N lines in --config, the directory becomes a standalone
server's: started on it (giraffe server --data-dir D), the server serves
exactly the snapshot's tree and continues the zxids after it.

With them, it becomes that ensemble member's (the server named by serverId
or the directory's myid): restore every member of the new ensemble from the
same file with the same server lines, then start them all; they elect a
leader as a new ensemble does and continue the zxids after the snapshot's.
The tree's /zookeeper/config, when the backed-up ensemble's membership had
changed, is replaced by the server lines'. docs/operations.md has the
procedures.`,
		Example: `  giraffe snapshot restore backup.snap --data-dir /var/lib/giraffe-restored
  giraffe snapshot restore backup.snap --config /etc/zookeeper/zoo.cfg   # on each member`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg := server.DefaultConfig()
			if configFile != "" {
				if _, err := server.LoadConfigFile(configFile, &cfg); err != nil {
					return err
				}
			}
			if cmd.Flags().Changed("data-dir") {
				cfg.DataDir = dataDir
			}
			if cmd.Flags().Changed("data-log-dir") {
				cfg.DataLogDir = dataLogDir
			}
			if cfg.DataDir == "" {
				return fmt.Errorf("no data directory: give --data-dir or a --config that sets dataDir")
			}
			dirs := []string{cfg.DataDir}
			if cfg.DataLogDir != "" {
				dirs = append(dirs, cfg.DataLogDir)
			}
			var st backup.Status
			var err error
			rewrote := false
			if cfg.Replicated() {
				if err := cfg.Validate(); err != nil {
					return err
				}
				st, err = backup.RestoreWith(args[0], dirs, func(tree *datatree.Tree) (seedErr error) {
					rewrote, seedErr = server.SeedMember(&cfg, tree)
					return seedErr
				})
			} else {
				st, err = backup.Restore(args[0], cfg.SnapDir(), cfg.LogDir(), dirs)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			what := "a standalone server"
			if cfg.Replicated() {
				what = fmt.Sprintf("member %d of %d", cfg.ServerID, len(cfg.Ensemble.Members))
			}
			fmt.Fprintf(out, "restored %s into %s as %s: zxid %s, %d znodes, digest %s\n",
				args[0], cfg.DataDir, what, st.Zxid, st.Znodes, st.Digest)
			if rewrote {
				fmt.Fprintln(out, "/zookeeper/config now lists this configuration's server lines (the digest differs from the file's)")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&configFile, "config", "", "the server's configuration (Giraffe's or a ZooKeeper zoo.cfg): its dataDir, dataLogDir and, for an ensemble member, its server.N lines and myid")
	f.StringVar(&dataDir, "data-dir", "", "the new data directory (dataDir); overrides the config's")
	f.StringVar(&dataLogDir, "data-log-dir", "", "the new log directory, when not inside the data directory (dataLogDir)")
	return cmd
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
