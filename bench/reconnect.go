package bench

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// loadSessionTimeout is the session timeout the load's sessions ask for.
const loadSessionTimeout = 30 * time.Second

// dialAll opens n sessions, session i on servers[i mod len] or, refused
// there, on the next servers with backoff, each within budget
// (0: DefaultOpenTimeout).
func dialAll(ctx context.Context, servers []string, n, outstanding int, budget time.Duration) ([]*session, error) {
	if budget <= 0 {
		budget = DefaultOpenTimeout
	}
	b := newBackoff(budget)
	sessions := make([]*session, 0, n)
	for i := 0; i < n; i++ {
		var s *session
		_, err := b.retry(ctx, servers, i, func(addr string, end time.Time) error {
			var err error
			s, err = redial(addr, nil, loadSessionTimeout, outstanding, attemptDeadline(end))
			return err
		})
		if err != nil {
			closeAll(sessions)
			return nil, fmt.Errorf("bench: session %d: %w", i, err)
		}
		sessions = append(sessions, s)
	}
	return sessions, nil
}

// reconnect brings worker i's session back after its connection (old,
// already failed) ended with cause, as a ZooKeeper client does: it
// resumes the session, presenting its id, password and last zxid seen,
// on the servers in turn from the next one, with backoff, until one takes
// it or ctx ends (nil session and nil error then). A session the servers
// have expired meanwhile is replaced by a new one. attempt numbers the
// worker's reconnects, so that each starts on another server.
func (r *runner) reconnect(ctx context.Context, i, attempt int, old *session, cause error) (*session, error) {
	r.reconnects.Add(1)
	tries := 0
	dialer := func(resume *session) func(addr string, end time.Time) error {
		return func(addr string, end time.Time) error {
			s, err := redial(addr, resume, loadSessionTimeout, r.pending, attemptDeadline(end))
			if err == nil {
				r.liveMu.Lock()
				r.live[i] = s
				r.liveMu.Unlock()
				return nil
			}
			if tries++; tries%len(r.cfg.Servers) == 0 && r.cfg.Progress != nil {
				fmt.Fprintf(r.cfg.Progress, "\nsession %d: no server takes it back (%v; last: %v)\n", i, cause, err)
			}
			return err
		}
	}
	b := newBackoff(0)
	first := i + attempt + 1
	_, err := b.retry(ctx, r.cfg.Servers, first, dialer(old))
	if errors.Is(err, errSessionExpired) {
		if r.cfg.Progress != nil {
			fmt.Fprintf(r.cfg.Progress, "\nsession %d: %v; opening a new one\n", i, err)
		}
		_, err = b.retry(ctx, r.cfg.Servers, first, dialer(nil))
	}
	r.liveMu.Lock()
	s := r.live[i]
	r.liveMu.Unlock()
	switch {
	case ctx.Err() != nil:
		s.close()
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("session %d: %w", i, err)
	}
	return s, nil
}
