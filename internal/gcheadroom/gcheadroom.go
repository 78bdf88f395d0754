// Package gcheadroom bounds, in bytes, how far the Go heap may grow past
// its live data before the garbage collector runs.
//
// GOGC sets that headroom as a fraction of the live heap: at the default
// of 100 a server holding a tree of 1 GB lets its heap reach 2 GB between
// collections, and its resident memory follows, although the tree itself
// changes slowly and most of that headroom is never needed. Lowering GOGC
// for every heap would instead make a small heap under a high write rate
// collect many times a second. Run keeps GOGC at its configured value
// while the live heap is small and lowers it as the heap grows, so that
// the headroom stays near a fixed number of bytes: the collector then runs
// as often as the allocation rate asks, not as the tree's size allows.
package gcheadroom

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// MinPercent is the lowest GOGC Run sets: below it a heap of many GB
// would be marked again after allocating a few percent of its size.
const MinPercent = 10

// Interval is how often Run looks at the live heap.
const Interval = time.Second

const liveHeap = "/gc/heap/live:bytes"

// Percent is the GOGC that gives a heap of live bytes at most headroom
// bytes to grow before a collection, within [MinPercent, ceiling]:
// ceiling (the process's own GOGC) when the live heap is small enough for
// it to give less.
func Percent(live, headroom uint64, ceiling int) int {
	if live == 0 || headroom == 0 {
		return ceiling
	}
	p := headroom * 100 / live
	if p >= uint64(ceiling) {
		return ceiling
	}
	return int(max(p, MinPercent))
}

// Run adjusts GOGC every Interval so that the heap grows at most headroom
// bytes past its live data, until ctx is done, and then restores the GOGC
// it found. It does nothing when headroom is 0 or the collector is off
// (GOGC=off).
func Run(ctx context.Context, headroom uint64) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if headroom == 0 || base <= 0 {
		return
	}
	defer debug.SetGCPercent(base)
	t := time.NewTicker(Interval)
	defer t.Stop()
	set := base
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		set = adjust(headroom, base, set)
	}
}

// adjust sets GOGC for the live heap the runtime measured at its last
// collection, given the process's own GOGC (base) and the one set now,
// and returns the one set after.
func adjust(headroom uint64, base, set int) int {
	sample := []metrics.Sample{{Name: liveHeap}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return set // a runtime without the metric: leave GOGC alone
	}
	if p := Percent(sample[0].Value.Uint64(), headroom, base); p != set {
		debug.SetGCPercent(p)
		return p
	}
	return set
}
