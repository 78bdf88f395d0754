package wal

import (
	"fmt"
	"path/filepath"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// LockDir takes the lock Open takes on the log directory dir, without
// opening the log, for tools that change a stopped server's files: while
// the lock is held no Log opens on dir, and LockDir fails, wrapping
// ErrLocked, while one is open there (in this process or another). The
// returned function releases the lock. dir must exist.
func LockDir(dir string) (release func() error, err error) {
	if _, present := openLog(dir); present {
		return nil, fmt.Errorf("wal: %s: %w", dir, ErrLocked)
	}
	release, err = fsutil.Lock(filepath.Join(dir, lockName))
	if err != nil {
		return nil, fmt.Errorf("wal: locking %s: %w", dir, err)
	}
	return release, nil
}
