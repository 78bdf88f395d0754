package transport

import (
	"math/rand/v2"
	"time"
)

// backoff spaces the connection attempts to one peer: exponential, capped,
// with jitter so that the servers of an ensemble that lost a peer at the
// same instant do not all knock on its door in lockstep when it restarts.
type backoff struct {
	min, max time.Duration
	cur      time.Duration
}

// next returns the pause before the next attempt: the current step doubled
// (from min, capped at max), of which a random half is kept ("equal
// jitter", so the pause never collapses to zero).
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.min
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	half := b.cur / 2
	if half <= 0 {
		return b.cur
	}
	return half + rand.N(b.cur-half+1)
}

// reset starts over from min, after a successful connection.
func (b *backoff) reset() { b.cur = 0 }
