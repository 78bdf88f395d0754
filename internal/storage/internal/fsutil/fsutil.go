// Package fsutil holds the few file-system primitives the durable storage
// packages share: syncing a directory (so that a create, rename or remove is
// itself durable) and syncing a file's data.
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
