package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// maxLatency is the largest latency a histogram records.
const maxLatency = 60 * time.Second

// NewHistogram returns a histogram of request latencies in microseconds,
// from 1 µs to a minute with three significant digits, the one every
// benchmark here records into.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(maxLatency/time.Microsecond), 3)
}

// Record adds one latency to h (one beyond maxLatency is left out, as
// the histogram refuses it).
func Record(h *hdrhistogram.Histogram, d time.Duration) {
	h.RecordValue(d.Microseconds())
}

// LatenciesOf summarizes a histogram filled by Record.
func LatenciesOf(h *hdrhistogram.Histogram) Latencies {
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return Latencies{Mean: h.Mean() / 1000, P50: ms(h.ValueAtQuantile(50)),
		P90: ms(h.ValueAtQuantile(90)), P99: ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)), Max: ms(h.Max())}
}
