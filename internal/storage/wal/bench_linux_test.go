//go:build linux

package wal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// BenchmarkFileDatasync measures the file system under the log, not the
// log: one 3 KiB write and an fdatasync per iteration, at the end of a
// growing file (what Append+Sync does), into a file fallocated ahead, and
// over a file written with zeros ahead. On ext4 the last skips the journal
// commit of the new size or extent; docs/benchmarks.md has the figures and
// docs/storage.md says why the log appends nonetheless.
func BenchmarkFileDatasync(b *testing.B) {
	const ahead = 64 << 20
	rec := make([]byte, 3<<10)
	for _, mode := range []string{"append", "fallocated", "zeroed"} {
		b.Run(mode, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "f"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			switch mode {
			case "fallocated":
				if err := syscall.Fallocate(int(f.Fd()), 0, 0, ahead); err != nil {
					b.Skip("fallocate:", err)
				}
			case "zeroed":
				if _, err := f.Write(make([]byte, ahead)); err != nil {
					b.Fatal(err)
				}
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			off := int64(0)
			for b.Loop() {
				if off+int64(len(rec)) > ahead {
					off = 0
				}
				if _, err := f.WriteAt(rec, off); err != nil {
					b.Fatal(err)
				}
				off += int64(len(rec))
				if err := syscall.Fdatasync(int(f.Fd())); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
