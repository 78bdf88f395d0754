package server

import (
	"crypto/rand"
	"encoding/binary"
	"sort"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// sessionTracker decides when sessions expire. It is the only place that
// reads a clock for sessions: expiry becomes a committed closeSession entry,
// so every replica removes the session and its ephemerals at the same point
// of the log, never by a local decision.
type sessionTracker struct {
	mu       sync.Mutex
	deadline map[int64]time.Time
	timeout  map[int64]time.Duration
	closing  map[int64]bool // expiry or close already submitted
	nextID   int64
}

// newSessionTracker seeds session ids as ZooKeeper does
// (SessionTrackerImpl.initializeNextSessionId): the server id in the top
// byte and the current time in milliseconds below it, so ids stay unique
// across restarts.
func newSessionTracker(serverID int64, now time.Time) *sessionTracker {
	next := (now.UnixMilli() << 24) >> 8 // keep 40 bits of time, clear the top byte
	next = int64(uint64(next) &^ (0xff << 56))
	next |= serverID << 56
	return &sessionTracker{
		deadline: make(map[int64]time.Time),
		timeout:  make(map[int64]time.Duration),
		closing:  make(map[int64]bool),
		nextID:   next,
	}
}

// newSession returns a fresh session id and password.
func (t *sessionTracker) newSession() (int64, []byte) {
	t.mu.Lock()
	t.nextID++
	id := t.nextID
	t.mu.Unlock()
	passwd := make([]byte, 16)
	rand.Read(passwd)
	return id, passwd
}

// add starts tracking a session with the given timeout.
func (t *sessionTracker) add(id int64, timeout time.Duration, now time.Time) {
	t.mu.Lock()
	t.timeout[id] = timeout
	t.deadline[id] = now.Add(timeout)
	t.mu.Unlock()
}

// touch extends a live session; it reports false for a session that is
// unknown or already being closed.
func (t *sessionTracker) touch(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	to, ok := t.timeout[id]
	if !ok || t.closing[id] {
		return false
	}
	t.deadline[id] = now.Add(to)
	return true
}

// markClosing records that a close was submitted; it reports false if one
// already was.
func (t *sessionTracker) markClosing(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing[id] {
		return false
	}
	t.closing[id] = true
	return true
}

// remove forgets a session once its close is applied.
func (t *sessionTracker) remove(id int64) {
	t.mu.Lock()
	delete(t.deadline, id)
	delete(t.timeout, id)
	delete(t.closing, id)
	t.mu.Unlock()
}

// expired returns the sessions past their deadline that are not already
// being closed, in id order, and marks them closing.
func (t *sessionTracker) expired(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []int64
	for id, d := range t.deadline {
		if now.After(d) && !t.closing[id] {
			t.closing[id] = true
			out = append(out, id)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// resetFrom replaces the tracked sessions by those of an installed
// snapshot, each with a full timeout from now.
func (t *sessionTracker) resetFrom(sessions []datatree.SessionInfo, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.deadline)
	clear(t.timeout)
	clear(t.closing)
	for _, si := range sessions {
		to := time.Duration(si.Timeout) * time.Millisecond
		t.timeout[si.ID], t.deadline[si.ID] = to, now.Add(to)
	}
}

// restartClocks gives every session a full timeout from now. A server that
// has just become the leader calls it: it has not been the one watching
// the sessions, so it must not expire any before its clients have had a
// timeout to show they are alive (ZooKeeper does the same on election).
func (t *sessionTracker) restartClocks(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, to := range t.timeout {
		t.deadline[id] = now.Add(to)
	}
	clear(t.closing)
}

// unmarkClosing undoes markClosing when the close was abandoned.
func (t *sessionTracker) unmarkClosing(id int64) {
	t.mu.Lock()
	delete(t.closing, id)
	t.mu.Unlock()
}

// timeoutOf returns the timeout session id expires by (0 if unknown).
func (t *sessionTracker) timeoutOf(id int64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.timeout[id]
}

// count returns the number of tracked sessions.
func (t *sessionTracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.timeout)
}

// leaderReceived is told, at the leader, of every proposal it admits
// before it is ordered (replica.Config.OnLeaderReceived). A touch is
// evidence that its sessions are alive now, at the leader, which alone
// expires sessions: counting it when it arrives, not when the log gets to
// it, keeps a backlog of writes ahead of it from expiring live sessions.
// The serving bound still holds (docs/ensemble.md): the leader hears a
// touch after its origin proposed it, so its deadline only moves later.
func (s *Server) leaderReceived(_ members.ID, body []byte) {
	if len(body) == 0 || body[0] != bodyTouch {
		return
	}
	now := time.Now()
	for b := body[1:]; len(b) >= 8; b = b[8:] {
		s.sessions.touch(int64(binary.BigEndian.Uint64(b)), now)
	}
}

// expiryLoop closes sessions whose clients have gone silent for longer
// than their timeout, through the log. In an ensemble only the leader
// expires. Its clocks restart, as ZooKeeper's do after an election, when it
// begins to lead an epoch: until then it was not the one watching the
// sessions. It also expires nothing while it has not applied every entry it
// knew committed a period earlier: a touch waiting to be applied here would
// otherwise go unseen (docs/ensemble.md, "Serving only with a quorum").
func (s *Server) expiryLoop() {
	defer s.wg.Done()
	lo, _ := s.cfg.sessionBounds()
	period := max(lo/4, 10*time.Millisecond)
	tk := time.NewTicker(period)
	defer tk.Stop()
	var (
		expiring   bool         // led on the previous tick
		epoch      gpaxos.Epoch // in this epoch
		commitSeen gpaxos.Zxid  // the commit point at the previous tick
	)
	for {
		select {
		case <-s.done:
			return
		case <-tk.C:
			// The time now, not the tick's: a restart must not date from
			// before the moment this server began to lead.
			now := time.Now()
			if rp, ok := s.pipe.(*replicated); ok {
				st := rp.rep.Status()
				if st.Role != replica.RoleLeader {
					expiring = false
					continue
				}
				seen := commitSeen
				commitSeen = st.Commit
				if !expiring || st.Epoch != epoch {
					s.sessions.restartClocks(now)
					expiring, epoch = true, st.Epoch
					continue
				}
				s.treeMu.RLock()
				applied := s.pipe.lastZxid()
				s.treeMu.RUnlock()
				if applied < int64(seen) {
					continue
				}
			}
			for _, id := range s.sessions.expired(now) {
				s.log.Info("session expired", "session", sessionHex(id))
				s.metrics.sessionsExpired.Inc()
				s.closeSession(id, nil)
			}
		}
	}
}

// closeSession submits the entry that ends session id (expiry when then is
// nil; a client's closeSession otherwise, with then queueing its reply).
func (s *Server) closeSession(id int64, then func(res txn.Result, e *txn.Entry)) bool {
	e := &txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCloseSession}}
	return s.pipe.submit(&proposal{entry: e, abandoned: func() { s.sessions.unmarkClosing(id) }, applied: func(res txn.Result, e *txn.Entry) {
		s.sessions.remove(id)
		if then != nil {
			then(res, e)
			return
		}
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
