package wal

import (
	"fmt"
	"log/slog"
	"testing"
)

// BenchmarkAppendSync measures group commit: each iteration appends a batch
// of 1 KiB records and syncs once. records/s is the number to compare; the
// fsync cost depends entirely on the disk under the test's temp directory.
func BenchmarkAppendSync(b *testing.B) {
	for _, batch := range []int{1, 16, 128} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			l, err := Open(b.TempDir(), Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			payload := payloadFor(1, 1024)
			b.SetBytes(int64(batch * len(payload)))
			z := int64(0)
			for b.Loop() {
				for range batch {
					z++
					if err := l.Append(z, payload); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.Sync(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(z)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
