//go:build unix

package server

import (
	"os"
	"syscall"
)

// fileDescriptors returns the open and the maximum number of file
// descriptors of this process (the soft RLIMIT_NOFILE), as ZooKeeper's
// OSMXBean reports them on Unix; ok is false when they cannot be read.
func fileDescriptors() (open, limit uint64, ok bool) {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0, 0, false
	}
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if es, err := os.ReadDir(dir); err == nil {
			// Reading the directory holds one descriptor of its own.
			return uint64(len(es)) - 1, rl.Cur, true
		}
	}
	return 0, 0, false
}
