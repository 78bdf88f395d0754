package backup

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/giraffe-coord/giraffe/internal/storage/snap"
)

// Restore makes the snapshot file the whole state of a fresh standalone
// data directory: it refuses unless each of dirs (the data directory, and
// the log's directory when it is elsewhere) is missing or empty, verifies
// the file (Load), and writes its tree to snapDir as the server's own
// snapshot at the file's zxid (snap.Save: fsynced, then renamed). A
// standalone server started on the directory loads that snapshot and
// finds an empty log after it, so it serves exactly the snapshot's tree
// and continues the zxids after it.
func Restore(file, snapDir string, dirs []string) (Status, error) {
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
	if _, err := snap.Save(snapDir, tree.LastZxid(), func(w io.Writer) error { return tree.WriteSnapshot(w) }); err != nil {
		return Status{}, err
	}
	return st, nil
}

// mustBeFresh refuses a directory that holds anything: restoring into it
// would mix the snapshot with another server's state.
func mustBeFresh(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty (%s, ...): restore only into a new, empty directory", dir, entries[0].Name())
	}
	return nil
}
