package sessions

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Guard is an ensemble member's proof of contact with a quorum. The member
// proposes a touch every period, listing the sessions connected to it, and
// notes the time (on its monotonic clock) at which it proposed each. When
// one of them commits, a quorum has accepted it and the leader, which
// applies it after it was proposed, has reset the deadlines of the
// sessions it lists to at least that time plus their timeout. The member
// serves while
//
//	now − (proposal time of the newest own touch known committed) < B
//
// where B is a third of the smallest timeout of the sessions connected to
// it. It is safe for concurrent use; Serving reads one atomic.
type Guard struct {
	// proof is when the newest own touch known committed was proposed;
	// -1: none.
	proof atomic.Int64

	mu       sync.Mutex
	proposed []touchMark // own touches not yet seen committed, oldest first
}

// touchMark is an own touch in flight: its place in this server's
// proposal streams and when it was proposed.
type touchMark struct {
	stream, seq uint64
	at          time.Duration
}

// maxTouchMarks bounds the touches remembered while none commits (a server
// cut off for long). Forgetting the oldest only forgoes proof that a newer
// touch would give anyway.
const maxTouchMarks = 256

// NewGuard returns a guard with no proof yet.
func NewGuard() *Guard {
	g := &Guard{}
	g.proof.Store(-1)
	return g
}

// Proposed records that the touch (stream, seq) was proposed at at.
func (g *Guard) Proposed(stream, seq uint64, at time.Duration) {
	g.mu.Lock()
	if len(g.proposed) >= maxTouchMarks {
		g.proposed = append(g.proposed[:0], g.proposed[1:]...)
	}
	g.proposed = append(g.proposed, touchMark{stream: stream, seq: seq, at: at})
	g.mu.Unlock()
}

// Committed records that the own touch (stream, seq) committed: the time
// it was proposed is the newest proof unless a later one is already known.
func (g *Guard) Committed(stream, seq uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, m := range g.proposed {
		if m.stream == stream && m.seq == seq {
			if int64(m.at) > g.proof.Load() {
				g.proof.Store(int64(m.at))
			}
			// Older touches can only give older proof.
			g.proposed = append(g.proposed[:0], g.proposed[i+1:]...)
			return
		}
	}
}

// Proof returns the proposal time of the newest own touch known committed
// (false: none yet).
func (g *Guard) Proof() (time.Duration, bool) {
	p := g.proof.Load()
	return time.Duration(p), p >= 0
}

// Serving reports whether the proof allows serving at now under bound B,
// and if not, why.
func (g *Guard) Serving(now, bound time.Duration) (bool, string) {
	proof := g.proof.Load()
	if proof < 0 {
		return false, "no proposal of this server has committed yet: no contact with a quorum shown"
	}
	if age := now - time.Duration(proof); age >= bound {
		return false, fmt.Sprintf("no contact with a quorum: the newest proposal of this server to commit was made %v ago, the bound is %v",
			age.Round(time.Millisecond), bound.Round(time.Millisecond))
	}
	return true, ""
}
