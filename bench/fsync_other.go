//go:build !linux

package bench

import "os"

// fdatasync makes f's data durable (f.Sync where fdatasync is missing).
func fdatasync(f *os.File) error { return f.Sync() }
