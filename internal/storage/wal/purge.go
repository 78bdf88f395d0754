package wal

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// PurgeBefore deletes the segments that hold only records with zxids up to
// zxid, typically the zxid of the oldest snapshot to keep: replaying from
// that snapshot needs only records after it. The newest segment is never
// deleted. Segments go oldest first, so the log stays a contiguous suffix
// even if a crash interrupts the purge. It returns the deleted paths.
func (l *Log) PurgeBefore(zxid int64) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return nil, err
	}
	removed, err := purgeSegments(l.dir, zxid, l.activePath, l.opts.NoSync, l.logger)
	l.damaged = slices.DeleteFunc(l.damaged, func(r Record) bool { return slices.Contains(removed, r.Segment) })
	return removed, err
}

// PurgeDir is PurgeBefore for a directory: if a Log is open on dir in this
// process the purge goes through it; otherwise PurgeDir takes the
// directory's lock (failing if another process has the log open) and
// purges the files itself. A directory that does not exist has nothing to
// purge. A nil logger means slog.Default().
func PurgeDir(dir string, zxid int64, logger *slog.Logger) ([]string, error) {
	if l, present := openLog(dir); present {
		if l == nil {
			return nil, fmt.Errorf("wal: %s is being opened; not purging", dir)
		}
		return l.PurgeBefore(zxid)
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	release, err := fsutil.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("wal: purging %s: %w", dir, err)
	}
	removed, err := purgeSegments(dir, zxid, "", false, logger)
	return removed, errors.Join(err, release())
}

// purgeSegments deletes, oldest first, every segment whose successor starts
// at or before zxid+1: all its records are then at most zxid. active is
// never deleted.
func purgeSegments(dir string, zxid int64, active string, noSync bool, logger *slog.Logger) ([]string, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var rerr error
	for i := 0; i+1 < len(segs) && segs[i+1].base-1 <= zxid && segs[i].path != active; i++ {
		if rerr = os.Remove(segs[i].path); rerr != nil {
			break
		}
		removed = append(removed, segs[i].path)
		logger.Info("wal: purged segment", "file", segs[i].path, "upto_zxid", formatZxid(zxid))
	}
	if len(removed) > 0 && !noSync {
		rerr = errors.Join(rerr, fsutil.SyncDir(dir))
	}
	return removed, rerr
}
