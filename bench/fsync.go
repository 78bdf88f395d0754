package bench

import (
	"os"
	"path/filepath"
	"time"
)

// FsyncProbe is what a short probe measured of the disk a run's servers
// write to, just before the run: with a neighbour's load the same disk can
// be several times slower, which a result read without it would blame on
// the server.
type FsyncProbe struct {
	Dir     string  `json:"dir"`               // where the probe wrote
	Syncs   int     `json:"syncs"`             // fdatasyncs timed
	P50Ms   float64 `json:"p50_ms"`            // median time of a 4 KiB write and its fdatasync
	P99Ms   float64 `json:"p99_ms"`            // 99th percentile
	MaxMs   float64 `json:"max_ms"`            // slowest
	Skipped string  `json:"skipped,omitempty"` // why the probe did not run, if it did not
}

// probeFsync appends 4 KiB to a new file in dir and syncs it, n times,
// as a log append does, and reports the times.
func probeFsync(dir string, n int) FsyncProbe {
	p := FsyncProbe{Dir: dir}
	f, err := os.CreateTemp(dir, "giraffe-bench-fsync-*")
	if err != nil {
		p.Skipped = err.Error()
		return p
	}
	defer os.Remove(f.Name())
	defer f.Close()
	p.Dir = filepath.Dir(f.Name())
	h := NewHistogram()
	block := make([]byte, 4096)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := f.Write(block); err != nil {
			p.Skipped = err.Error()
			return p
		}
		if err := fdatasync(f); err != nil {
			p.Skipped = err.Error()
			return p
		}
		Record(h, time.Since(start))
	}
	l := LatenciesOf(h)
	p.Syncs, p.P50Ms, p.P99Ms, p.MaxMs = n, l.P50, l.P99, l.Max
	return p
}
