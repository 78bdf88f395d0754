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
//
// Appends wait only for the segments to be renamed aside
// (fsutil.TrashSuffix); they are deleted after, gradually, outside the
// log's lock, so that the purge of a gigabyte of log does not hold up
// the writes queued behind it.
func (l *Log) PurgeBefore(zxid int64) ([]string, error) {
	l.mu.Lock()
	if err := l.usable(); err != nil {
		l.mu.Unlock()
		return nil, err
	}
	removed, err := purgeSegments(l.dir, zxid, l.activePath)
	l.damaged = slices.DeleteFunc(l.damaged, func(r Record) bool { return slices.Contains(removed, r.Segment) })
	l.mu.Unlock()
	return removed, errors.Join(err, emptyTrash(l.dir, removed, l.opts.NoSync, l.logger))
}

// emptyTrash makes the renames of the removed segments durable and
// deletes what dir's trash holds.
func emptyTrash(dir string, removed []string, noSync bool, logger *slog.Logger) error {
	var err error
	if len(removed) > 0 && !noSync {
		err = fsutil.SyncDir(dir)
	}
	for _, p := range removed {
		logger.Info("wal: purged segment", "file", p)
	}
	_, terr := fsutil.RemoveTrash(dir)
	return errors.Join(err, terr)
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
	removed, err := purgeSegments(dir, zxid, "")
	err = errors.Join(err, emptyTrash(dir, removed, false, logger))
	return removed, errors.Join(err, release())
}

// purgeSegments renames aside (fsutil.TrashSuffix), oldest first, every
// segment whose successor starts at or before zxid+1: all its records are
// then at most zxid. active is never purged.
func purgeSegments(dir string, zxid int64, active string) ([]string, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var rerr error
	for i := 0; i+1 < len(segs) && segs[i+1].base-1 <= zxid && segs[i].path != active; i++ {
		if rerr = os.Rename(segs[i].path, segs[i].path+fsutil.TrashSuffix); rerr != nil {
			break
		}
		removed = append(removed, segs[i].path)
	}
	return removed, rerr
}
