package recipes

import "time"

// The switching rule of ReactiveLock follows the experiments of The Cost of
// Consensus repeated on a 3-server ensemble (`giraffe-lab primitives`;
// docs/primitives.md has the figures):
//
//   - with no added client round trip the synchronous queue lock is the
//     faster of the two queue protocols when the servers are far apart:
//     polling only adds listings, each of which waits behind the session's
//     writes;
//   - with a client round trip many poll intervals long, the asynchronous
//     one wins at every server round trip:
//     pipelining the create with the listing saves one client round trip
//     uncontended, and a poll notices a release about half a round trip
//     sooner than a watch followed by a listing.
//
// So the rule uses the client's round trip only: asynchronous once it
// reaches the poll interval (polls then cost less than the round trips
// they save), synchronous again when it falls under half of it.
const (
	// ewmaWeight is the weight of a new sample in the moving averages: a
	// handful of acquisitions is enough to follow a change of conditions.
	ewmaWeight = 0.25
)

func ewma(old, sample float64) float64 { return old + ewmaWeight*(sample-old) }

func ewmaDur(old, sample time.Duration) time.Duration {
	if old == 0 {
		return sample
	}
	return time.Duration(ewma(float64(old), float64(sample)))
}

// record folds one acquisition, made with the asynchronous protocol or
// not, into the measurements.
func (s *ReactiveStats) record(async bool, took time.Duration) {
	if s.Acquisitions > 0 && async != s.Async {
		s.Switches++
	}
	s.Acquisitions++
	s.Async = async
	if async {
		s.AcquireAsync = ewmaDur(s.AcquireAsync, took)
	} else {
		s.AcquireSync = ewmaDur(s.AcquireSync, took)
	}
}

// chooseAsync is the rule: asynchronous when the client's round trip is at
// least the poll interval, with hysteresis.
func chooseAsync(async bool, rtt, poll time.Duration) bool {
	if async {
		return rtt >= poll/2
	}
	return rtt >= poll
}

// Bounds of the reactive lock's polling window (listings on the wire).
const (
	minPollWindow = defaultMaxInFlight
	maxPollWindow = 256
)

// pollWindow is how many listings the reactive lock keeps on the wire
// while it waits asynchronously: enough for one to arrive every poll
// interval over the measured round trip, within bounds (the listings cost
// the servers only reads; 256 covers half a second at 2 ms).
func pollWindow(rtt, poll time.Duration) int {
	if poll <= 0 {
		return minPollWindow
	}
	return min(max(int(rtt/poll)+1, minPollWindow), maxPollWindow)
}
