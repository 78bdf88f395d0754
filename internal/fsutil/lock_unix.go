//go:build unix

package fsutil

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned by Lock when another process (or another open file
// in this process) holds the lock.
var ErrLocked = errors.New("already locked by another user of the directory")

// Lock takes an exclusive advisory lock (flock) on the file at path,
// creating it if needed, and returns the function that releases it. The
// kernel drops the lock when the process dies, so a crash never leaves a
// stale lock behind.
func Lock(path string) (release func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		ferr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		f.Close()
		return nil, err
	}
	if ferr != nil {
		f.Close()
		if errors.Is(ferr, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: ferr}
	}
	// Closing the descriptor releases the flock.
	return f.Close, nil
}
