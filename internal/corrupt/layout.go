package corrupt

import (
	"errors"
	"fmt"
	"os"

	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/server"
)

// layout is where a data directory keeps its snapshots and log, and
// whose it is: a member's files hold Group Paxos framing around the
// server's bytes.
type layout struct {
	name            string // "standalone" or "member"
	member          bool
	snapDir, logDir string
	note            string
}

func standalone(dataDir string) layout {
	cfg := server.Config{DataDir: dataDir}
	return layout{name: "standalone", snapDir: cfg.SnapDir(), logDir: cfg.LogDir()}
}

func member(replicaDir string) layout {
	return layout{name: "member", member: true, snapDir: replica.SnapshotDir(replicaDir), logDir: replica.LogDir(replicaDir)}
}

// detect tells which layout dir has: a member's data directory (with
// replica/), a replica directory itself, or a standalone server's data
// directory. A directory with both a replica directory and a standalone
// server's files is taken as the member's when the replica's log holds
// records, as the standalone server's otherwise.
func detect(dir string) (layout, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return layout{}, fmt.Errorf("no data directory: %w", err)
	}
	if !st.IsDir() {
		return layout{}, fmt.Errorf("%s is not a directory", dir)
	}
	alone := standalone(dir)
	hasAlone := isDir(alone.snapDir) || isDir(alone.logDir)
	cfg := server.Config{DataDir: dir}
	if isDir(cfg.ReplicaDir()) {
		m := member(cfg.ReplicaDir())
		switch {
		case !hasAlone:
			return m, nil
		case hasRecords(m.logDir):
			m.note = "both replica/ and a standalone server's files are here; replica/log holds records, so the member's files are used"
			return m, nil
		}
		alone.note = "both replica/ and a standalone server's files are here; replica/log holds no record, so the standalone server's files are used"
		return alone, nil
	}
	if m := member(dir); isDir(m.snapDir) && isDir(m.logDir) {
		return m, nil
	}
	if hasAlone {
		return alone, nil
	}
	return layout{}, fmt.Errorf("unknown layout: %s holds neither a standalone server's snap/ or log/, nor an ensemble member's replica/, nor is it a replica directory (log/ and snapshots/)", dir)
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// errFound stops a walk at what it looked for.
var errFound = errors.New("found")

// hasRecords reports whether the log in dir holds a record (or damage
// where one was meant to be).
func hasRecords(dir string) bool {
	err := wal.Records(dir, func(wal.Record) error { return errFound })
	var ce *wal.CorruptError
	return errors.Is(err, errFound) || errors.As(err, &ce)
}
