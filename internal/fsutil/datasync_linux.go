package fsutil

import (
	"os"
	"syscall"
)

// SyncData makes the data written to f durable. On Linux it uses
// fdatasync(2), which skips flushing metadata that is not needed to read the
// data back (timestamps), but still flushes a changed file size.
func SyncData(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = syscall.Fdatasync(int(fd))
			if serr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: serr}
	}
	return nil
}
