package bench

import (
	"context"
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
			s, err = dialUntil(addr, loadSessionTimeout, outstanding, attemptDeadline(end))
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
