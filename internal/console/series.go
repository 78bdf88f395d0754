package console

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Sample is one second of a server's load, as the console's charts plot
// it: requests answered in the second (reads and writes apart), the 50th
// and 99th percentile of their latency, and the log's fsyncs.
type Sample struct {
	// At is the end of the second, in Unix milliseconds.
	At     int64 `json:"t"`
	Writes int64 `json:"writes"`
	Reads  int64 `json:"reads"`
	// P50Ms and P99Ms are request latencies in milliseconds (0 without
	// requests), as the upper bound of the histogram bucket holding the
	// percentile: within a factor of bucketGrowth of the true value.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// Fsyncs, FsyncMs (mean duration) and FsyncBatch (mean entries per
	// fsync) describe the log's fsyncs in the second.
	Fsyncs     int64   `json:"fsyncs"`
	FsyncMs    float64 `json:"fsync_ms"`
	FsyncBatch float64 `json:"fsync_batch"`
}

// Latency histogram: bucket i holds latencies up to bucketBase *
// bucketGrowth^i; the last bucket holds everything longer.
const (
	buckets      = 64
	bucketBase   = 10 * time.Microsecond
	bucketGrowth = 1.25
)

// Recorder keeps a server's load, second by second, for the last Keep
// seconds. Observing is lock-free (request paths call it); Roll, called
// once a second, closes the current second into a Sample.
type Recorder struct {
	writes, reads       atomic.Int64
	hist                [buckets]atomic.Int64
	fsyncs, fsyncNanos  atomic.Int64
	fsyncEntries        atomic.Int64
	mu                  sync.Mutex
	ring                []Sample
	next, filled, limit int
}

// Keep is how many seconds of samples a Recorder holds: five minutes.
const Keep = 300

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{ring: make([]Sample, Keep), limit: Keep} }

// Request records one answered request and its latency.
func (r *Recorder) Request(write bool, d time.Duration) {
	if write {
		r.writes.Add(1)
	} else {
		r.reads.Add(1)
	}
	r.hist[bucketOf(d)].Add(1)
}

// Sync records one fsync of the log: how many entries it made durable and
// how long it took.
func (r *Recorder) Sync(entries int, d time.Duration) {
	r.fsyncs.Add(1)
	r.fsyncNanos.Add(int64(d))
	r.fsyncEntries.Add(int64(entries))
}

// Roll closes the second ending at now into a Sample and returns it.
// Requests observed concurrently land in this second or the next, never
// in neither.
func (r *Recorder) Roll(now time.Time) Sample {
	s := Sample{At: now.UnixMilli(), Writes: r.writes.Swap(0), Reads: r.reads.Swap(0)}
	var h [buckets]int64
	var n int64
	for i := range h {
		h[i] = r.hist[i].Swap(0)
		n += h[i]
	}
	s.P50Ms, s.P99Ms = percentile(h[:], n, 0.50), percentile(h[:], n, 0.99)
	if s.Fsyncs = r.fsyncs.Swap(0); s.Fsyncs > 0 {
		s.FsyncMs = float64(r.fsyncNanos.Swap(0)) / float64(s.Fsyncs) / 1e6
		s.FsyncBatch = float64(r.fsyncEntries.Swap(0)) / float64(s.Fsyncs)
	} else {
		r.fsyncNanos.Swap(0)
		r.fsyncEntries.Swap(0)
	}
	r.mu.Lock()
	r.ring[r.next] = s
	r.next = (r.next + 1) % r.limit
	r.filled = min(r.filled+1, r.limit)
	r.mu.Unlock()
	return s
}

// Samples returns the samples held, oldest first.
func (r *Recorder) Samples() []Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Sample, 0, r.filled)
	for i := r.filled; i > 0; i-- {
		out = append(out, r.ring[(r.next-i+r.limit)%r.limit])
	}
	return out
}

// Latest returns the newest sample, or the zero Sample before the first
// Roll.
func (r *Recorder) Latest() Sample {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.filled == 0 {
		return Sample{}
	}
	return r.ring[(r.next-1+r.limit)%r.limit]
}

// bucketOf returns the histogram bucket of latency d.
func bucketOf(d time.Duration) int {
	if d <= bucketBase {
		return 0
	}
	i := int(math.Ceil(math.Log(float64(d)/float64(bucketBase)) / math.Log(bucketGrowth)))
	return min(i, buckets-1)
}

// bucketMs is the upper bound of bucket i in milliseconds.
func bucketMs(i int) float64 {
	return float64(bucketBase) * math.Pow(bucketGrowth, float64(i)) / 1e6
}

// percentile returns the upper bound (ms) of the bucket holding quantile q
// of the n latencies in h, 0 when n is 0.
func percentile(h []int64, n int64, q float64) float64 {
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	var seen int64
	for i, c := range h {
		seen += c
		if seen >= rank {
			return math.Round(bucketMs(i)*1000) / 1000
		}
	}
	return bucketMs(len(h) - 1)
}
