//go:build !unix

package fsutil

import (
	"errors"
	"os"
)

// ErrLocked is returned by Lock when another user holds the lock.
var ErrLocked = errors.New("already locked by another user of the directory")

// Lock creates the file at path and returns a release function. Outside
// Unix no advisory lock is taken, so this only creates the file; the
// in-process registry of open logs still prevents a double open within one
// process.
func Lock(path string) (release func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}
