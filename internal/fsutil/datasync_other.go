//go:build !linux

package fsutil

import "os"

// SyncData makes the data written to f durable. Outside Linux it is
// (*os.File).Sync, which on macOS issues F_FULLFSYNC.
func SyncData(f *os.File) error { return f.Sync() }
