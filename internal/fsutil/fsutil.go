// Package fsutil holds the few file-system primitives the packages that
// keep durable state share (the log, snapshots, the replica's small files,
// JSON records): syncing a directory (so that a create, rename or remove
// is itself durable), syncing a file's data, and replacing a small file
// atomically.
package fsutil

import (
	"errors"
	"os"
	"path/filepath"
)

// SyncDir fsyncs the directory dir. On POSIX systems a new, renamed or
// removed directory entry is durable only once its directory is synced;
// syncing the file alone is not enough.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	return errors.Join(serr, cerr)
}

// MkdirAll creates dir (and its parents) if needed and, when it did create
// it, syncs the parent so that the new directory survives a crash.
func MkdirAll(dir string, perm os.FileMode) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, perm); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(filepath.Clean(dir)))
}

// WriteFileAtomic replaces path by data so that a reader, or a crash,
// finds the old content or the new, never a mix: a temporary file beside
// it, fsynced, renamed over it, the directory fsynced. With noSync the
// syncs are skipped (the rename still keeps readers from a half-written
// file).
func WriteFileAtomic(path string, data []byte, noSync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if noSync {
		return nil
	}
	return SyncDir(filepath.Dir(path))
}
