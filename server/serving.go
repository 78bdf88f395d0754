package server

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/sessions"
)

// Serving: an ensemble member answers its clients only while it can show
// that it is in contact with a live quorum, so that a client whose session
// the ensemble may expire has been disconnected first (ZooKeeper's
// contract: such a client sees Disconnected before anyone else can take
// its ephemeral nodes, and lock recipes rely on it). The proof is
// sessions.Guard's: this server's own touch entries (touchBody), one every
// period, listing the sessions connected here. B is a third of the
// smallest session timeout of the sessions connected here
// (minSessionTimeout with none), and the server must also be a member of
// the ensemble's committed membership. The argument that the leader
// cannot expire a session connected here while this server serves is in
// docs/ensemble.md ("Serving only with a quorum"). Standalone servers
// always serve.

// notServingText is ZooKeeper's answer to most four-letter words while
// its server is not running (AbstractFourLetterCommand.ZK_NOT_SERVING).
const notServingText = "This ZooKeeper instance is not currently serving requests"

// servingGuard is an ensemble member's evidence of quorum contact and
// membership. The fields read on every client request are atomics.
type servingGuard struct {
	*sessions.Guard
	// sessionBound is B for the sessions connected here (0: none).
	sessionBound atomic.Int64
	// outside is set while this server is not in the committed membership.
	outside atomic.Bool

	mu      sync.Mutex
	serving bool // the state last acted on (connections closed, logged)
}

func newServingGuard() *servingGuard { return &servingGuard{Guard: sessions.NewGuard()} }

// sinceStart is the monotonic clock the guard measures on.
func (s *Server) sinceStart() time.Duration { return time.Since(s.started) }

// bound returns B: a third of the smallest timeout of the sessions
// connected here, or of minSessionTimeout when none is.
func (s *Server) bound() time.Duration {
	if b := time.Duration(s.guard.sessionBound.Load()); b > 0 {
		return b
	}
	lo, _ := s.cfg.sessionBounds()
	return lo / 3
}

// longestBound is the largest B any session can have: a third of
// maxSessionTimeout.
func (s *Server) longestBound() time.Duration {
	_, hi := s.cfg.sessionBounds()
	return hi / 3
}

// servingFor reports whether this server may serve now, and if not, why.
// A client in its handshake passes the timeout t of its session-to-be,
// which counts with the sessions connected here instead of
// minSessionTimeout; 0 asks for the server as a whole.
func (s *Server) servingFor(t time.Duration) (bool, string) {
	if !s.cfg.Replicated() {
		return true, ""
	}
	g := s.guard
	if g.outside.Load() {
		return false, "this server is not in the ensemble's committed membership (removed from it, or its addition not applied yet)"
	}
	if !s.nsDeclared.Load() {
		return false, "its tree does not declare the configured namespaces yet (the leader proposes the declaration)"
	}
	b := s.bound()
	if t > 0 && (g.sessionBound.Load() == 0 || t/3 < b) {
		b = t / 3
	}
	return g.Serving(s.sinceStart(), b)
}

// lateHandshake returns a close reason when a handshake's entry in the
// log (the new session, or the reconnect's revalidation), submitted at
// start, committed too late: that entry stands for the session's first
// touch from this server until a touch listing it commits, and must be
// recent for the margin of docs/ensemble.md to hold (within half of B, a
// sixth of t, the session's timeout). The client tries again.
func (s *Server) lateHandshake(start time.Time, t time.Duration) string {
	if !s.cfg.Replicated() {
		return ""
	}
	if took := time.Since(start); took >= t/6 {
		s.log.Info("refusing client: its session's entry took longer than a sixth of its timeout to commit",
			"took", took.Round(time.Millisecond), "timeout", t)
		return "handshake committed too late"
	}
	return ""
}

// serving reports whether this server serves its clients now.
func (s *Server) serving() bool {
	ok, _ := s.servingFor(0)
	return ok
}

// refreshBound recomputes B from the sessions connected here. A session's
// timeout here is the smaller of the one negotiated on its connection and
// the one the ensemble expires it by (its creation's, which every
// replica's tracker holds).
func (s *Server) refreshBound() {
	s.connsMu.Lock()
	var least time.Duration
	for sid, c := range s.bySession {
		t := c.timeout
		if et := s.sessions.TimeoutOf(sid); et > 0 && et < t {
			t = et
		}
		if least == 0 || t < least {
			least = t
		}
	}
	// Stored under the lock, so that a session attached meanwhile
	// (lowerBound) is never overwritten by a bound computed without it.
	s.guard.sessionBound.Store(int64(least / 3))
	s.connsMu.Unlock()
}

// lowerBound makes B at most a third of the timeout of session sid,
// connected through c, at once (refreshBound raises it again once the
// session has left). connsMu is held.
func (s *Server) lowerBound(c *conn, sid int64) {
	t := c.timeout
	if et := s.sessions.TimeoutOf(sid); et > 0 && et < t {
		t = et
	}
	if cur := s.guard.sessionBound.Load(); cur == 0 || int64(t/3) < cur {
		s.guard.sessionBound.Store(int64(t / 3))
	}
}

// servingLoop proposes this member's touch every period (B/4, at most a
// quarter of minSessionTimeout), with the sessions connected here, and
// acts on the serving state: when the server stops serving it closes its
// client connections at once, without waiting for a client to ask.
func (s *Server) servingLoop(rp *replicated) {
	defer s.wg.Done()
	lo, _ := s.cfg.sessionBounds()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-timer.C:
		}
		s.refreshBound()
		b := s.bound()
		if !s.guard.outside.Load() {
			rp.proposeTouch(s.attachedSessions())
		}
		s.actOnServing()
		next := max(min(b, lo)/4, 5*time.Millisecond)
		if proof, ok := s.guard.Proof(); ok {
			// Wake when the proof runs out, not up to a period later.
			if left := proof + b - s.sinceStart(); left > 0 && left < next {
				next = left + time.Millisecond
			}
		}
		timer.Reset(next)
	}
}

// lag is how far behind real time this member's applied state may be: a
// touch it proposed at t and has applied was ordered after t, so the state
// after it is at least as new as the ensemble's at t. -1s until one of its
// touches has been applied.
func (s *Server) lag() time.Duration {
	proof, ok := s.guard.Proof()
	if !ok {
		return -time.Second
	}
	return s.sinceStart() - proof
}

// proposeTouch proposes a touch of ids and remembers when.
func (r *replicated) proposeTouch(ids []int64) {
	g := r.s.guard
	r.rep.Propose(touchBody(ids), func(stream, seq uint64) { g.Proposed(stream, seq, r.s.sinceStart()) })
}

// ownTouchCommitted records that this server's touch (stream, seq)
// committed, and resumes serving if the proof allows it again.
func (s *Server) ownTouchCommitted(stream, seq uint64) {
	g := s.guard
	g.Committed(stream, seq)
	g.mu.Lock()
	resume := !g.serving
	g.mu.Unlock()
	if resume {
		s.actOnServing()
	}
}

// checkMember records whether this server is in the committed membership,
// as the configuration at zxid left it. A configuration change that
// leaves a server out (giraffe leave) stops its serving; one that only
// moves it to another group keeps it in the membership.
func (s *Server) checkMember(zxid int64) {
	m, _, _ := s.membership.get()
	_, in := m.Member(s.cfg.ServerID)
	if was := !s.guard.outside.Swap(!in); was != in {
		if in {
			s.log.Info("this server is in the committed membership", "zxid", fmt.Sprintf("0x%x", uint64(zxid)))
		} else {
			s.log.Warn("this server is not in the committed membership: it serves no client",
				"zxid", fmt.Sprintf("0x%x", uint64(zxid)))
		}
		s.actOnServing()
	}
}

// actOnServing compares the serving state with the one last acted on; on
// a change it logs why, and when the server stops serving it closes every
// client connection.
func (s *Server) actOnServing() {
	ok, why := s.servingFor(0)
	g := s.guard
	g.mu.Lock()
	changed := ok != g.serving
	g.serving = ok
	g.mu.Unlock()
	if !changed {
		return
	}
	if ok {
		s.log.Info("serving clients: in contact with a quorum")
		return
	}
	n := s.closeSessions("server not serving: " + why)
	level := slog.LevelInfo
	if n > 0 {
		level = slog.LevelWarn
	}
	s.log.Log(context.Background(), level, "not serving: closing client connections and refusing new ones", "why", why, "closed", n)
}

// closeSessions closes the connection of every session connected here and
// returns how many. A connection still in its handshake is left to the
// handshake's own checks, which judge it by its own timeout (its session
// does not count in B yet).
func (s *Server) closeSessions(reason string) int {
	s.connsMu.Lock()
	cs := make([]*conn, 0, len(s.bySession))
	for _, c := range s.bySession {
		cs = append(cs, c)
	}
	s.connsMu.Unlock()
	for _, c := range cs {
		c.close(reason)
	}
	return len(cs)
}
