package server

import (
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// leaderReceived is told, at the leader, of every proposal it admits
// before it is ordered (replica.Config.OnLeaderReceived). A touch is
// evidence that its sessions are alive now, at the leader, which alone
// expires sessions: counting it when it arrives, not when the log gets to
// it, keeps a backlog of writes ahead of it from expiring live sessions.
// The serving bound still holds (docs/ensemble.md): the leader hears a
// touch after its origin proposed it, so its deadline only moves later.
func (s *Server) leaderReceived(_ members.ID, body []byte) {
	if len(body) > 0 {
		s.touchListed(body, time.Now())
	}
}

// touchListed touches, at now, the sessions a touch body lists, in either
// of its encodings; other bodies touch nothing.
func (s *Server) touchListed(body []byte, now time.Time) {
	switch body[0] {
	case bodyTouch:
		s.sessions.TouchListed(body[1:], now)
	case bodyTouchFixed:
		s.sessions.TouchListedFixed(body[1:], now)
	}
}

// expiryChunk is how many expiries the leader has in flight at once. A
// mass expiry (thousands of clients gone together, each session with its
// ephemerals) goes through the log a chunk at a time, each chunk once the
// one before is applied, so that the clients' writes interleave with it
// instead of waiting behind all of it.
const expiryChunk = 128

// expiryLoop closes sessions whose clients have gone silent for longer
// than their timeout, through the log. In an ensemble only the leader
// expires, when sessions.Expiry allows it.
func (s *Server) expiryLoop() {
	defer s.wg.Done()
	lo, _ := s.cfg.sessionBounds()
	period := max(lo/4, 10*time.Millisecond)
	tk := time.NewTicker(period)
	defer tk.Stop()
	var expiry sessions.Expiry
	for {
		select {
		case <-s.done:
			return
		case <-tk.C:
			// The time now, not the tick's: a restart must not date from
			// before the moment this server began to lead.
			now := time.Now()
			var decidedAt uint64 // what this leader had applied when it found the expiries below
			ensemble := false
			if rp, ok := s.pipe.(*replicated); ok {
				ensemble = true
				st := rp.rep.Status()
				s.treeMu.RLock()
				applied := s.pipe.lastZxid()
				s.treeMu.RUnlock()
				decidedAt = uint64(applied)
				if !expiry.Due(s.sessions, now, sessions.Status{Leader: st.Role == replica.RoleLeader,
					Epoch: uint64(st.Epoch), Commit: uint64(st.Commit), Applied: uint64(applied)}) {
					continue
				}
			}
			if !s.expireAll(s.sessions.Expired(now), ensemble, decidedAt, period) {
				return
			}
		}
	}
}

// expireAll submits the expiries of ids, decided at decidedAt, a chunk
// (expiryChunk) at a time, each once the one before has been applied or
// abandoned, or after patience if it has not. Submitted later than
// decided, an expiry is still checked against the moves of its session
// since decidedAt and against its epoch (expireSession). It returns false
// when the server stops meanwhile.
func (s *Server) expireAll(ids []int64, ensemble bool, decidedAt uint64, patience time.Duration) bool {
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), expiryChunk)]
		ids = ids[len(chunk):]
		left := make(chan struct{}, len(chunk))
		resolved := func() {
			select {
			case left <- struct{}{}:
			default: // never block the applier
			}
		}
		for _, id := range chunk {
			s.log.Info("session expired", "session", sessionHex(id))
			s.metrics.sessionsExpired.Inc()
			if !s.expireSession(id, ensemble, decidedAt, resolved) {
				resolved()
			}
		}
		if len(ids) == 0 {
			return true
		}
		timeout := time.NewTimer(patience)
		for n := 0; n < len(chunk); n++ {
			select {
			case <-left:
			case <-timeout.C:
				n = len(chunk)
			case <-s.done:
				timeout.Stop()
				return false
			}
		}
		timeout.Stop()
		if rp, ok := s.pipe.(*replicated); ok && rp.rep.Status().Role != replica.RoleLeader {
			// No longer the leader: the new one decides for itself.
			for _, id := range ids {
				s.sessions.UnmarkClosing(id)
			}
			return true
		}
	}
	return true
}

// expireSession submits the entry that ends session id, expired by this
// server, in an ensemble as the leader that had applied up to zxid
// decidedAt (its tracker had seen every move of the session up to there).
// The entry takes effect only if it commits in that epoch and after no
// later move of the session (sessions.Owners.ExpiryCounts); otherwise, as
// when the proposal is abandoned, the session may be expired again.
// resolved runs once the entry has been applied or abandoned.
func (s *Server) expireSession(id int64, ensemble bool, decidedAt uint64, resolved func()) bool {
	e := &txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCloseSession}}
	return s.pipe.submit(&proposal{entry: e, expiry: ensemble, decidedAt: decidedAt,
		abandoned: func() {
			s.sessions.UnmarkClosing(id)
			resolved()
		},
		applied: func(res txn.Result, e *txn.Entry) {
			defer resolved()
			if e == nil {
				s.sessions.UnmarkClosing(id) // decided in another epoch than it committed in
				return
			}
			s.sessions.Remove(id)
			if c := s.connOfSession(id); c != nil {
				c.close("session expired")
			}
		}})
}

// maintenanceLoop reaps empty containers and expired TTL nodes (through the
// log, like every write) and purges old files on the configured interval.
func (s *Server) maintenanceLoop() {
	defer s.wg.Done()
	reap := time.NewTicker(s.cfg.ContainerCheckInterval)
	defer reap.Stop()
	var purge <-chan time.Time
	if s.cfg.PurgeInterval > 0 {
		t := time.NewTicker(s.cfg.PurgeInterval)
		defer t.Stop()
		purge = t.C
	}
	for {
		select {
		case <-s.done:
			return
		case now := <-reap.C:
			if !s.isLeader() {
				continue // one server reaps for the ensemble
			}
			s.treeMu.RLock()
			paths := s.tree.ReapCandidates(now.UnixMilli())
			s.treeMu.RUnlock()
			for _, p := range paths {
				e := &txn.Entry{Op: txn.Op{Kind: txn.KindDeleteContainer, Path: p}}
				if !s.pipe.submit(&proposal{entry: e}) {
					return
				}
			}
		case <-purge:
			if _, ok := s.pipe.(*pipeline); ok {
				s.snaps.purge()
			}
		}
	}
}
