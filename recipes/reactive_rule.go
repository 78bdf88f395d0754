package recipes

import "time"

// The switching rule of ReactiveLock, from BenchmarkLockContention
// (lock_bench_test.go; the table is in docs/primitives.md). With n
// contenders in a closed loop against the in-process server:
//
//   - uncontended (n=1) test-and-set costs one round trip and the queue
//     two: 0.087 vs 0.140 ms at loopback RTT, 10.9 vs 16.2 ms with 5 ms
//     added, so test-and-set wins by about one RTT;
//   - at n=2 the two are equal (1.41 vs 1.43 ms mean);
//   - from n=4 (three contenders met per acquisition) test-and-set's tail
//     explodes with the herd and its unfairness (p99 56 vs 4.5 ms), and
//     from n=8 its mean too (11.3 vs 9.4 ms; n=32: 86 vs 40 ms; with
//     5 ms RTT, n=32: 675 vs 360 ms).
//
// The crossover is a contention of about three contenders met per
// acquisition, independent of the RTT in these runs (the RTT moves both
// protocols' handoff by the same round trip and a half; what differs is
// the herd), so the rule uses contention only; the RTT is measured and
// reported, not used.
const (
	// ewmaWeight is the weight of a new sample in the moving averages: a
	// handful of acquisitions is enough to follow a change of load.
	ewmaWeight = 0.25
	// queueAbove: switch to queueing when the contention average reaches
	// it.
	queueAbove = 3.0
	// tasBelow: switch back to test-and-set when it falls under it. The
	// gap between the two keeps a lock at the crossover from flapping.
	tasBelow = 1.5
)

func ewma(old, sample float64) float64 { return old + ewmaWeight*(sample-old) }

func ewmaDur(old, sample time.Duration) time.Duration {
	if old == 0 {
		return sample
	}
	return time.Duration(ewma(float64(old), float64(sample)))
}

// record folds one acquisition into the measurements and applies the
// rule for the next one.
func (s *ReactiveStats) record(queued bool, took time.Duration, m sample) {
	s.Acquisitions++
	if m.rtt > 0 {
		s.RTT = ewmaDur(s.RTT, m.rtt)
	}
	if s.Acquisitions == 1 {
		s.Contention = float64(m.contended)
	} else {
		s.Contention = ewma(s.Contention, float64(m.contended))
	}
	if queued {
		s.AcquireQueue = ewmaDur(s.AcquireQueue, took)
	} else {
		s.AcquireTAS = ewmaDur(s.AcquireTAS, took)
	}
	next := chooseQueue(queued, s.Contention)
	if next != queued {
		s.Switches++
	}
	s.Queue = next
}

// chooseQueue is the rule: queue under contention, test-and-set without.
func chooseQueue(queued bool, contention float64) bool {
	if queued {
		return contention >= tasBelow
	}
	return contention >= queueAbove
}
