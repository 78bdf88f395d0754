package bench

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// openLoopPending bounds the requests an open-loop session may have
// unanswered: past it, sending waits, and the wait counts in the latency
// of the requests that were due meanwhile.
const openLoopPending = 1 << 15

// openLoop sends session i's share of Config.Rate at exponentially
// distributed intervals, whatever is answered. When the connection fails
// it counts the requests in flight as errors, reconnects and carries on
// from the schedule: the requests that fell due meanwhile leave at once,
// their latency counted from when they were due.
func (r *runner) openLoop(ctx context.Context, i int, s *session) error {
	local := NewHistogram()
	defer r.mergeHist(local)
	rng := rand.New(rand.NewSource(int64(i) + 1))
	a := newArrivals(r.cfg.Rate/float64(r.cfg.Sessions), rng)
	for attempt := 0; ; attempt++ {
		err := r.arrive(ctx, i, s, rng, a, local)
		if ctx.Err() != nil {
			s.shut() // before local is merged: the reader records into it
			return nil
		}
		s.fail()
		if s, err = r.reconnect(ctx, i, attempt, s, err); s == nil {
			return err
		}
	}
}

// arrive runs the open-loop load on s until ctx ends (nil) or the
// connection fails (its error). Requests already due leave in one write;
// the socket is flushed before waiting for the next arrival.
func (r *runner) arrive(ctx context.Context, i int, s *session, rng *rand.Rand, a *arrivals, local *hdrhistogram.Histogram) error {
	readErr := s.reader()
	done := func(code zkproto.Code, _ []byte, due time.Time) { r.record(code, due, local) }
	for {
		due, err := a.await(ctx, readErr, s.flush)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return fmt.Errorf("session %d: %w", i, err)
		}
		if err := r.sendOneAt(s, i, rng, due, done); err != nil {
			return err
		}
	}
}

// arrivals is a Poisson process: the times of a session's requests, at
// exponentially distributed intervals of mean 1/rate.
type arrivals struct {
	at    time.Time
	mean  float64 // seconds between arrivals, on average
	rng   *rand.Rand
	timer *time.Timer
}

func newArrivals(rate float64, rng *rand.Rand) *arrivals {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &arrivals{at: time.Now(), mean: 1 / rate, rng: rng, timer: t}
}

// next returns the time of the next arrival.
func (a *arrivals) next() time.Time {
	a.at = a.at.Add(time.Duration(a.rng.ExpFloat64() * a.mean * float64(time.Second)))
	return a.at
}

// await returns the time of the next arrival once it has come. When there
// is time to wait, idle (if not nil) runs first. It returns early with
// ctx's error when ctx ends, or with an error from fail (nil: none) or
// from idle.
func (a *arrivals) await(ctx context.Context, fail <-chan error, idle func() error) (time.Time, error) {
	due := a.next()
	wait := time.Until(due)
	if wait <= 0 {
		select {
		case <-ctx.Done():
			return due, ctx.Err()
		case err := <-fail:
			return due, err
		default:
			return due, nil
		}
	}
	if idle != nil {
		if err := idle(); err != nil {
			return due, err
		}
	}
	a.timer.Reset(wait)
	defer a.timer.Stop()
	select {
	case <-ctx.Done():
		return due, ctx.Err()
	case err := <-fail:
		return due, err
	case <-a.timer.C:
		return due, nil
	}
}
