package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// A server may refuse handshakes for a while and still be healthy: Giraffe
// closes a connection unanswered while it is not serving (its liveness
// writes do not commit fast enough, say), ZooKeeper while it is not
// running or has seen less than the client. ZooKeeper's clients then try
// the next server of their list after a pause, until their budget is
// spent, and so does the benchmark: one refusal says nothing about the
// run, only a session that no server takes within its budget does.

// Pauses between a session's attempts: from retryFirst, doubling, at most
// retryMax, each drawn at random in its upper half, so that thousands of
// sessions refused together do not all come back together.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 2 * time.Second
)

// DefaultOpenTimeout is how long a session may take to open (or to come
// back after its connection was lost) when the configuration says nothing.
const DefaultOpenTimeout = 60 * time.Second

// handshakeLimit bounds one attempt (dial and handshake): a server that
// neither answers nor refuses is left for the next one.
const handshakeLimit = 15 * time.Second

// errSessionExpired is what a handshake resuming a session returns when
// the server no longer knows it (a ConnectResponse with timeOut 0); no
// other server will take it either.
var errSessionExpired = errors.New("session expired")

// backoff is the retry policy of the sessions that connect: capped
// exponential pauses with jitter, over a time budget. Its clock, random
// source and sleep are fields so that tests can drive it.
type backoff struct {
	first, max time.Duration
	// budget bounds the attempts of one session, pauses included;
	// 0 retries until the context ends.
	budget time.Duration
	now    func() time.Time
	// rand returns a number in [0, n), uniformly.
	rand  func(n int64) int64
	sleep func(ctx context.Context, d time.Duration) error
}

// newBackoff is the policy of the benchmark's sessions, with the given
// budget (0: none).
func newBackoff(budget time.Duration) backoff {
	return backoff{first: retryFirst, max: retryMax, budget: budget, now: time.Now, rand: rand.Int64N, sleep: sleepCtx}
}

// pause returns the wait before retry k (1 for the first): first·2^(k-1),
// at most max, drawn uniformly in [d/2, d].
func (b backoff) pause(k int) time.Duration {
	d := b.max
	if k <= 62 {
		if p := b.first << (k - 1); p > 0 && p < b.max {
			d = p
		}
	}
	return d/2 + time.Duration(b.rand(int64(d-d/2)+1))
}

// retry calls attempt on servers[first], then on the next server of the
// list after each failure, pausing between attempts, until an attempt
// succeeds, one fails with errSessionExpired (final), ctx ends, or the
// next pause would end past the budget. attempt gets the end of the
// budget (zero: none) to bound its own wait. retry returns how many
// attempts were retries and, if none succeeded, why.
func (b backoff) retry(ctx context.Context, servers []string, first int,
	attempt func(addr string, deadline time.Time) error) (retries int, err error) {
	var deadline time.Time
	if b.budget > 0 {
		deadline = b.now().Add(b.budget)
	}
	for k := 0; ; k++ {
		if k > 0 {
			d := b.pause(k)
			if !deadline.IsZero() && b.now().Add(d).After(deadline) {
				return k - 1, fmt.Errorf("no server took the session within %v (%d attempts; the last: %w)", b.budget, k, err)
			}
			if serr := b.sleep(ctx, d); serr != nil {
				return k - 1, fmt.Errorf("%w (the last attempt: %v)", serr, err)
			}
		}
		if err = attempt(servers[(first+k)%len(servers)], deadline); err == nil || errors.Is(err, errSessionExpired) {
			return k, err
		}
		if ctx.Err() != nil {
			return k, fmt.Errorf("%w (the last attempt: %v)", ctx.Err(), err)
		}
	}
}

// attemptDeadline is when one attempt gives up: handshakeLimit from now,
// or the end of the budget if that comes first.
func attemptDeadline(budgetEnd time.Time) time.Time {
	d := time.Now().Add(handshakeLimit)
	if !budgetEnd.IsZero() && budgetEnd.Before(d) {
		return budgetEnd
	}
	return d
}
