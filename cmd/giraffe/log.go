package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/internal/backup"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/server"
)

func newLogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "List or verify a stopped server's transaction log",
		Long: `log reads the transaction log of a data directory offline: it takes no lock
and changes nothing. Run it on a stopped server's directory (or a copy): a
running server may be halfway through a write. The directory is a
standalone server's (dataDir/log, or --data-log-dir) or, when it holds
replica/, an ensemble member's (dataDir/replica/log).`,
	}
	cmd.AddCommand(newLogDumpCmd(), newLogVerifyCmd())
	return cmd
}

// logFlags are the flags that say where a log is.
type logFlags struct{ dataDir, dataLogDir string }

func (f *logFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", "the data directory (dataDir)")
	cmd.Flags().StringVar(&f.dataLogDir, "data-log-dir", "", "a standalone server's log directory, when not inside the data directory (dataLogDir)")
	cmd.MarkFlagRequired("data-dir")
}

// log finds the log: a member's when the data directory has a replica
// directory, otherwise a standalone server's.
func (f *logFlags) log() (backup.Log, error) {
	cfg := server.Config{DataDir: f.dataDir, DataLogDir: f.dataLogDir}
	if f.dataLogDir == "" {
		if st, err := os.Stat(cfg.ReplicaDir()); err == nil && st.IsDir() {
			return backup.Log{Dir: replica.LogDir(cfg.ReplicaDir()), Member: true}, nil
		}
	}
	dir := cfg.LogDir()
	if _, err := os.Stat(dir); err != nil {
		return backup.Log{}, fmt.Errorf("no transaction log at %s: %w", dir, err)
	}
	return backup.Log{Dir: dir}, nil
}

func newLogDumpCmd() *cobra.Command {
	var f logFlags
	cmd := &cobra.Command{
		Use:   "dump --data-dir D",
		Short: "List every record of the transaction log",
		Long: `dump prints every record of the log in zxid order, one line each: the zxid,
segment:offset, the namespace mask (mask=0x...) when the log stores one, and
for a standalone server's log the entry's kind, session, time and path (a
multi's ops and paths); for a member's, the Group Paxos entry type and size. At a damaged record it stops with an error naming the
file and offset, after the records before it.`,
		Example: `  giraffe log dump --data-dir /var/lib/giraffe`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.log()
			if err != nil {
				return err
			}
			return backup.DumpLog(l, cmd.OutOrStdout())
		},
	}
	f.add(cmd)
	return cmd
}

func newLogVerifyCmd() *cobra.Command {
	var f logFlags
	cmd := &cobra.Command{
		Use:   "verify --data-dir D",
		Short: "Verify every record of the transaction log",
		Long: `verify checks the log as a server's start does, without repairing anything:
both checksums of every record, zxid order, the chain of segments, and that
every record decodes. It exits with status 1, naming the file and the
offset of the first bad record, on damage a server would refuse to start
on, and on a last record that is whole but damaged (a server cuts it off,
but it may have been acknowledged). A torn tail, what a crash in the middle
of a write leaves, is reported and is not a failure: it was never
acknowledged, and the server cuts it off when it starts.`,
		Example: `  giraffe log verify --data-dir /var/lib/giraffe`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := f.log()
			if err != nil {
				return err
			}
			rep, err := backup.VerifyLog(l)
			var ce *wal.CorruptError
			if errors.As(err, &ce) {
				return fmt.Errorf("log damaged: %s at offset %d: %s", ce.File, ce.Offset, ce.Reason)
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d segments, %d records after 0x%x, last zxid 0x%x\n",
				l.Dir, rep.Segments, rep.Records, rep.After, rep.LastZxid)
			switch {
			case rep.Tail.Damaged:
				return fmt.Errorf("log damaged: %s at offset %d: the last record is whole but fails its checksum (%s): "+
					"it may have been acknowledged, and a server would cut it off", rep.TailFile, rep.TailOffset, rep.Tail.Reason)
			case rep.Tail.Bytes > 0:
				fmt.Fprintf(out, "torn tail: %d bytes at offset %d of %s (%s): a write a crash interrupted, never acknowledged; a server cuts it off\n",
					rep.Tail.Bytes, rep.TailOffset, rep.TailFile, rep.Tail.Reason)
			}
			fmt.Fprintln(out, "OK")
			return nil
		},
	}
	f.add(cmd)
	return cmd
}
