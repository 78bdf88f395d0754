package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// TrashSuffix ends the name of a file set aside for RemoveGradually: the
// owner renames a file it no longer needs to name+TrashSuffix (at once,
// under whatever lock guards its directory) and deletes it afterwards,
// outside the lock. Readers of the directory skip such names, and
// RemoveTrash deletes what a crash left of them.
const TrashSuffix = ".trash"

// removeStep and removePause pace RemoveGradually.
const (
	removeStep  = 4 << 20
	removePause = 10 * time.Millisecond
)

// RemoveGradually deletes path a step at a time: it shortens the file by
// 4 MiB, pauses 10 ms, and so on, then unlinks it. A file system that
// discards freed blocks when its journal commits (ext4 mounted with
// discard) makes every fsync that waits for that commit wait for the
// discard of everything freed since the one before: a gigabyte deleted at
// once holds a log's fsync for hundreds of milliseconds, and even one
// log segment deleted at once sets the tail of a write's latency. The
// steps are not synced; the journal's own commits, and the log's, carry
// them. A file of 1 GB takes 2.5 s, far faster than a log fills.
func RemoveGradually(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	var size int64
	if fi, serr := f.Stat(); serr != nil {
		err = serr
	} else {
		size = fi.Size()
	}
	for err == nil && size > removeStep {
		size -= removeStep
		if err = f.Truncate(size); err == nil {
			time.Sleep(removePause)
		}
	}
	cerr := f.Close()
	rerr := os.Remove(path)
	if errors.Is(rerr, os.ErrNotExist) {
		rerr = nil
	}
	return errors.Join(err, cerr, rerr)
}

// RemoveTrash deletes, gradually, the files of dir whose names end in
// TrashSuffix and returns how many it deleted.
func RemoveTrash(dir string) (int, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil
		}
		return 0, err
	}
	var errs []error
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), TrashSuffix) || !e.Type().IsRegular() {
			continue
		}
		if err := RemoveGradually(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}
