package bench

import (
	"os"
	"syscall"
)

// fdatasync makes f's data durable, as the write-ahead log does.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
