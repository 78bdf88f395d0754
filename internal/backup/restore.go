package backup

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// Restore makes the snapshot file the whole state of a fresh standalone
// data directory: it writes the file's tree to snapDir as the server's own
// snapshot at the file's zxid (snap.Save: fsynced, then renamed), through
// RestoreWith, and begins the log in logDir after that zxid
// (wal.Log.StartAfter). A standalone server started on the directory loads
// that snapshot and finds an empty log after it, so it serves exactly the
// snapshot's tree and continues the zxids after it; and should every
// snapshot be damaged one day, the log says that it does not hold the
// whole history.
func Restore(file, snapDir, logDir string, dirs []string) (Status, error) {
	return RestoreWith(file, dirs, func(tree *datatree.Tree) error {
		if _, err := snap.Save(snapDir, tree.LastZxid(), func(w io.Writer) error { return tree.WriteSnapshot(w) }); err != nil {
			return err
		}
		lg, err := wal.Open(logDir, wal.Options{})
		if err != nil {
			return err
		}
		if err := lg.StartAfter(tree.LastZxid()); err != nil {
			lg.Close()
			return err
		}
		return lg.Close()
	})
}

// RestoreWith makes the snapshot file the state of fresh directories: it
// refuses unless each of dirs (the data directory, and the log's directory
// when it is elsewhere) is missing or holds nothing but ZooKeeper's myid
// file, verifies the file (Load), creates dirs, and hands the tree to
// install, which writes it as the server's state (a standalone server's
// snapshot, or an ensemble member's seeded storage).
func RestoreWith(file string, dirs []string, install func(*datatree.Tree) error) (Status, error) {
	for _, d := range dirs {
		if err := mustBeFresh(d); err != nil {
			return Status{}, err
		}
	}
	tree, st, err := Load(file)
	if err != nil {
		return Status{}, err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return Status{}, err
		}
	}
	if err := install(tree); err != nil {
		return Status{}, err
	}
	return st, nil
}

// mustBeFresh refuses a directory that holds anything but a myid file
// (which names an ensemble member, as in ZooKeeper): restoring into it
// would mix the snapshot with another server's state.
func mustBeFresh(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	for _, e := range entries {
		if e.Name() != "myid" {
			return fmt.Errorf("%s is not empty (%s, ...): restore only into a new, empty directory", dir, e.Name())
		}
	}
	return nil
}
