package server

import (
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// contacts records, on every ensemble member, when each member's own touch
// entry (serving.go) last committed here, measured on this server's clock.
// A member proposes a touch at least every quarter of minSessionTimeout
// while it is in contact with a quorum, so one whose touch has not
// committed for minSessionTimeout is cut off, stopped or lagging far
// behind. mntr's zk_synced_followers counts the others.
type contacts struct {
	mu   sync.Mutex
	last map[members.ID]time.Time
}

// touched records that a touch from id committed at now.
func (c *contacts) touched(id members.ID, now time.Time) {
	c.mu.Lock()
	if c.last == nil {
		c.last = make(map[members.ID]time.Time)
	}
	c.last[id] = now
	c.mu.Unlock()
}

// inContact counts the servers among ids whose touch committed within
// window before now.
func (c *contacts) inContact(ids []members.ID, now time.Time, window time.Duration) int {
	n := 0
	for _, id := range ids {
		if c.heard(id, now, window) {
			n++
		}
	}
	return n
}

// heard reports whether a touch from id committed within window before
// now.
func (c *contacts) heard(id members.ID, now time.Time, window time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.last[id]
	return ok && now.Sub(t) < window
}

// contactWindow is how recently a member's touch must have committed
// here for it to count as in contact (mntr's synced_followers, the live
// quorum of a membership change): the smallest session timeout, in which
// a member in contact with a quorum touches at least four times.
func (s *Server) contactWindow() time.Duration {
	lo, _ := s.cfg.sessionBounds()
	return lo
}
