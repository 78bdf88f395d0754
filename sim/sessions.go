package sim

import (
	"cmp"
	"slices"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The session layer: ZooKeeper sessions, an ephemeral lock and the rules
// that keep a client from staying connected to a server while the
// ensemble expires its session (internal/sessions, which the server runs
// too). Lock clients (lockers) connect to a server, which orders their
// session through the log; they take the lock by creating the ephemeral
// znode lockPath, hold it a while and delete it, and ping their server
// every third of the session timeout. Every server proposes a touch of
// the sessions connected to it every period and serves only within the
// bound of its newest own touch known committed (sessions.Guard); the
// leader expires sessions through the log (sessions.Tracker,
// sessions.Expiry), which deletes their lock. A client takes its
// connection for lost when its server closes it or stays silent for two
// thirds of the timeout, as a ZooKeeper client does, and from then on
// stops counting itself as the holder (Curator's and kazoo's lock recipes
// do the same on SUSPENDED). It then reconnects with its session to a
// server it picks, which orders the session's move through the log
// (sessions.Owners: writes the client sent through the server it left are
// refused from then on); once the move is applied the client is connected
// again, and holds the lock again if its ephemeral znode is still there at
// that place in the order. A server that finds the session ended says so,
// and the client starts a new one. The checker: no client's create of the
// lock succeeds, and no client takes it back on a reconnect, while another
// client, still connected, holds it.

// lockPath is the lock's znode.
const lockPath = "/lock"

// Proposal bodies of the session layer (first byte), apart from the
// register workload's (regMagic) and the probes (probeMagic).
const (
	sessTxnMagic    byte = 0x5e // a txn.Entry of a session or the lock
	sessTouchMagic  byte = 0x7c // the sessions connected to the proposer
	sessMoveMagic   byte = 0x6d // a session's move to the proposer (sessions.AppendMove)
	sessExpiryMagic byte = 0x6e // a leader's expiry: the epoch it was decided in, then a txn.Entry
)

// locker is a lock client.
type locker struct {
	id      int
	sv      *server // the server it is connected (or connecting) to
	session int64
	// gen names the current connection: events of an older one are void.
	gen       int
	connected bool
	// established: the session was created (a lost connection is
	// followed by a reconnect with it, not a new session).
	established bool
	holds       bool
	busy        bool // an operation is in flight
	lastHeard   int64
}

// sessionServer is the session layer of one incarnation of a server.
type sessionServer struct {
	tracker *sessions.Tracker
	guard   *sessions.Guard
	expiry  sessions.Expiry
	started int64 // the guard's monotonic clock starts here
	// attached are the sessions connected to this server.
	attached map[int64]attachment
	pending  map[proposalID]*sessionReq
	serving  bool // the state last acted on
}

// attachment is a session's connection to a server.
type attachment struct {
	l   *locker
	gen int
}

// proposalID is a proposal's place in its origin's streams.
type proposalID struct{ stream, seq uint64 }

// reqKind is what a session request does.
type reqKind int

const (
	reqConnect reqKind = iota
	reqReconnect
	reqAcquire
	reqRelease
	reqExpire
)

// sessionReq is a session-layer proposal a server waits on.
type sessionReq struct {
	kind    reqKind
	l       *locker
	gen     int
	session int64
	start   int64
}

func (s *Sim) sessionTimeout() time.Duration {
	return time.Duration(s.p.SessionTimeoutUS) * time.Microsecond
}

// newSessionServer is sv's session layer for the incarnation starting now,
// with its loops.
func (s *Sim) newSessionServer(sv *server) *sessionServer {
	ss := &sessionServer{tracker: sessions.NewTracker(int64(sv.id), simClock{s}.Now()), guard: sessions.NewGuard(),
		started: s.clk.now, attached: map[int64]attachment{}, pending: map[proposalID]*sessionReq{}}
	inc := sv.inc
	s.touchLoop(sv, inc)
	s.expiryLoop(sv, inc)
	return ss
}

// alive reports whether sv still runs the incarnation inc (paused or not).
func (sv *server) alive(inc int) bool { return sv.up && sv.inc == inc && sv.ss != nil }

// since is sv's monotonic clock, the guard's.
func (s *Sim) since(sv *server) time.Duration {
	return time.Duration(s.clk.now-sv.ss.started) * time.Microsecond
}

// servingFor is server.servingFor: a member of the configuration within
// the bound of its newest own touch known committed. Every session here
// has one timeout, so B is a third of it.
func (s *Sim) servingFor(sv *server) bool {
	if sv.host.Voters().GroupOf(quorum.ID(sv.id)) < 0 {
		return false
	}
	if s.p.NoServingGuard {
		return true
	}
	ok, _ := sv.ss.guard.Serving(s.since(sv), s.sessionTimeout()/3)
	return ok
}

// touchLoop is server.servingLoop: every period sv proposes a touch of its
// sessions and acts on its serving state, waking when the proof runs out.
func (s *Sim) touchLoop(sv *server, inc int) {
	t := s.sessionTimeout()
	next := max(t/3/4, 5*time.Millisecond)
	s.clk.after(next.Microseconds(), func() {
		if !sv.alive(inc) || s.failed() {
			return
		}
		if !sv.paused {
			if s.clk.now < s.stopClientsAt && sv.host.Voters().GroupOf(quorum.ID(sv.id)) >= 0 {
				s.proposeTouch(sv)
			}
			s.actOnServing(sv)
		}
		s.touchLoop(sv, inc)
	})
}

// proposeTouch proposes a touch of the sessions connected to sv.
func (s *Sim) proposeTouch(sv *server) {
	ss := sv.ss
	ids := make([]int64, 0, len(ss.attached))
	for id := range ss.attached {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	b := sessions.AppendTouch([]byte{sessTouchMagic}, ids)
	at := s.since(sv)
	sv.host.Propose(b, func(stream, seq uint64) { ss.guard.Proposed(stream, seq, at) })
	s.kick(sv)
}

// isTouch reports whether b is a touch.
func isTouch(b []byte) bool { return len(b) > 0 && b[0] == sessTouchMagic }

// leaderReceived is sv's replica.HostConfig.OnLeaderReceived: a touch
// counts at the leader when it arrives.
func (s *Sim) leaderReceived(sv *server, body []byte) {
	if isTouch(body) && sv.ss != nil {
		sv.ss.tracker.TouchListed(body[1:], simClock{s}.Now())
	}
}

// actOnServing closes every connection of sv when it stops serving.
func (s *Sim) actOnServing(sv *server) {
	ss := sv.ss
	ok := s.servingFor(sv)
	changed := ok != ss.serving
	ss.serving = ok
	if !changed || ok {
		return
	}
	ids := make([]int64, 0, len(ss.attached))
	for id := range ss.attached {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		s.closeConn(sv, id, "server not serving")
	}
}

// closeConn closes session id's connection to sv; its client hears of it
// one network delay later.
func (s *Sim) closeConn(sv *server, id int64, why string) {
	a, ok := sv.ss.attached[id]
	if !ok {
		return
	}
	delete(sv.ss.attached, id)
	s.toLocker(a.l, a.gen, func() { s.lost(a.l, why) })
}

// expiryLoop is server.expiryLoop: the leader closes expired sessions
// through the log.
func (s *Sim) expiryLoop(sv *server, inc int) {
	period := max(s.sessionTimeout()/4, 10*time.Millisecond)
	s.clk.after(period.Microseconds(), func() {
		if !sv.alive(inc) || s.failed() {
			return
		}
		if !sv.paused {
			st := sv.host.Status()
			now := simClock{s}.Now()
			if sv.ss.expiry.Due(sv.ss.tracker, now, sessions.Status{Leader: st.Leader,
				Epoch: uint64(st.HardState.Current), Commit: uint64(st.HardState.Commit), Applied: uint64(sv.applied)}) {
				s.expireAll(sv, inc, sv.ss.tracker.Expired(now), s.decidedAt(sv, st), period)
			}
		}
		s.expiryLoop(sv, inc)
	})
}

// simExpiryChunk is server.expiryChunk for the simulator's few sessions:
// one expiry at a time, so that every expiry after the first of a round
// is proposed later than the leader decided it, as the server's chunks
// are.
const simExpiryChunk = 1

// expireAll is server.expireAll: it proposes the expiries of ids,
// decided at decidedAt, a chunk at a time. The server sends a chunk once
// the one before is applied; here the next leaves a quarter of patience
// later, while sv still leads (otherwise the rest are no longer closing).
func (s *Sim) expireAll(sv *server, inc int, ids []int64, decidedAt uint64, patience time.Duration) {
	if len(ids) == 0 {
		return
	}
	n := min(len(ids), simExpiryChunk)
	for _, id := range ids[:n] {
		s.stats.sessionsExpired++
		s.note("server %d: session %d expired", sv.id, id)
		e := txn.Entry{Session: id, Time: s.clk.now / 1000, Op: txn.Op{Kind: txn.KindCloseSession}}
		s.proposeBody(sv, &sessionReq{kind: reqExpire, session: id, start: s.clk.now},
			e.Marshal(sessions.AppendExpiry([]byte{sessExpiryMagic}, decidedAt)))
	}
	rest := ids[n:]
	if len(rest) == 0 {
		return
	}
	s.clk.after(max(patience/4, time.Millisecond).Microseconds(), func() {
		if !sv.alive(inc) || s.failed() {
			return
		}
		if sv.paused || !sv.host.Status().Leader {
			for _, id := range rest {
				sv.ss.tracker.UnmarkClosing(id)
			}
			return
		}
		s.expireAll(sv, inc, rest, decidedAt, patience)
	})
}

// proposeSession proposes e for req and files req under the proposal.
func (s *Sim) proposeSession(sv *server, req *sessionReq, e txn.Entry) {
	e.Time = s.clk.now / 1000
	s.proposeBody(sv, req, e.Marshal([]byte{sessTxnMagic}))
}

// proposeBody proposes body for req and files req under the proposal.
func (s *Sim) proposeBody(sv *server, req *sessionReq, body []byte) {
	ss := sv.ss
	sv.host.Propose(body, func(stream, seq uint64) { ss.pending[proposalID{stream, seq}] = req })
	s.kick(sv)
}

// isSessionBody reports whether b is a session-layer proposal.
func isSessionBody(b []byte) bool {
	return len(b) > 0 && (b[0] == sessTxnMagic || b[0] == sessTouchMagic || b[0] == sessMoveMagic || b[0] == sessExpiryMagic)
}

// applySession applies a committed session-layer entry to sv and answers
// the request sv filed for it.
func (s *Sim) applySession(sv *server, cm *replica.Committed) {
	now := simClock{s}.Now()
	if isTouch(cm.Body) {
		s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
		if sv.ss == nil {
			return
		}
		sv.ss.tracker.TouchListed(cm.Body[1:], now)
		if cm.Own {
			sv.ss.guard.Committed(cm.Stream, cm.Seq)
			if !sv.ss.serving {
				s.actOnServing(sv)
			}
		}
		return
	}
	if cm.Body[0] == sessMoveMagic {
		s.applyMove(sv, cm)
		return
	}
	body := cm.Body[1:]
	var decidedAt uint64
	if cm.Body[0] == sessExpiryMagic {
		var ok bool
		if decidedAt, body, ok = sessions.ParseExpiry(body); !ok {
			s.fail(failCrash, "server %d: undecodable expiry at %v", sv.id, cm.Zxid)
			return
		}
	}
	e, err := txn.Unmarshal(body)
	if err != nil {
		s.fail(failCrash, "server %d: undecodable session entry at %v: %v", sv.id, cm.Zxid, err)
		return
	}
	if cm.Body[0] == sessExpiryMagic && !s.expiryCounts(sv, e.Session, decidedAt, cm.Zxid) {
		// server/replicated.go: decided by a leader of another epoch, or
		// before a move it had not applied; ignored by every replica alike.
		s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
		if req := sv.takePending(cm); req != nil {
			sv.ss.tracker.UnmarkClosing(req.session)
		}
		return
	}
	e.Zxid = int64(cm.Zxid)
	var res txn.Result
	moved := sv.owners.MovedAway(e, cm.Origin)
	if moved {
		res.Err = zkproto.ErrSessionMoved
	} else {
		res, _ = sv.tree.Apply(e)
		sv.owners.Track(e, res, cm.Origin)
	}
	s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
	s.stats.commitAt(s, cm.Zxid)
	ss := sv.ss
	if ss == nil {
		return
	}
	if moved && cm.Own {
		// server/owners.go's refuseMoved: the connection is closed
		// rather than answered.
		s.closeConn(sv, e.Session, "session moved to another server")
	}
	switch e.Op.Kind {
	case txn.KindCreateSession:
		if res.Err == zkproto.OK {
			ss.tracker.Add(e.Session, time.Duration(e.Timeout)*time.Millisecond, now)
		}
	case txn.KindCloseSession:
		ss.tracker.Remove(e.Session)
		s.closeConn(sv, e.Session, "session closed by the ensemble")
	}
	if req := sv.takePending(cm); req != nil {
		s.answer(sv, req, res.Err)
	}
}

// decidedAt is where sv, the leader, decides an expiry: the zxid it has
// applied up to (server/sessions.go), or, with ExpiryDespiteMove, only its
// epoch, as when the rule checked nothing else.
func (s *Sim) decidedAt(sv *server, st gpaxos.Status) uint64 {
	if s.p.ExpiryDespiteMove {
		return uint64(st.HardState.Current) << 32
	}
	return uint64(sv.applied)
}

// expiryCounts is sessions.Owners.ExpiryCounts, or, with ExpiryInAnyEpoch
// or ExpiryDespiteMove, the rule without the part they leave out.
func (s *Sim) expiryCounts(sv *server, id int64, decidedAt uint64, at gpaxos.Zxid) bool {
	switch {
	case s.p.ExpiryInAnyEpoch:
		return true
	case s.p.ExpiryDespiteMove:
		return decidedAt>>32 == uint64(at.Epoch())
	}
	return sv.owners.ExpiryCounts(id, decidedAt, uint64(at))
}

// takePending returns, and forgets, the session request sv filed for its
// own committed entry cm (nil when there is none).
func (sv *server) takePending(cm *replica.Committed) *sessionReq {
	if !cm.Own || sv.ss == nil {
		return nil
	}
	k := proposalID{cm.Stream, cm.Seq}
	req := sv.ss.pending[k]
	delete(sv.ss.pending, k)
	return req
}

// answer completes req, whose entry committed with code at sv.
func (s *Sim) answer(sv *server, req *sessionReq, code zkproto.Code) {
	l, gen := req.l, req.gen
	switch req.kind {
	case reqConnect:
		if code != zkproto.OK || s.late(req) {
			s.toLocker(l, gen, func() { s.lost(l, "handshake refused") })
			return
		}
		sv.ss.attached[req.session] = attachment{l: l, gen: gen}
		s.toLocker(l, gen, func() { s.connected(l, gen) })
	case reqReconnect:
		switch {
		case code == zkproto.ErrSessionExpired:
			s.toLocker(l, gen, func() { s.expired(l) })
		case code != zkproto.OK || s.late(req):
			s.toLocker(l, gen, func() { s.lost(l, "reconnect refused") })
		default:
			s.reconnected(sv, l, gen, req.session)
		}
	case reqAcquire:
		s.toLocker(l, gen, func() { s.acquired(l, gen, code) })
	case reqRelease:
		s.toLocker(l, gen, func() { s.released(l, gen) })
	}
}

// late is server.lateHandshake: a handshake whose entry committed a sixth
// of the session timeout or more after it was submitted is refused.
func (s *Sim) late(req *sessionReq) bool { return s.clk.now-req.start >= s.p.SessionTimeoutUS/6 }

// sessionResent files sv's session requests whose proposals moved to a new
// stream under their new numbers.
func (sv *server) sessionResent(moves []replica.Resend) {
	if sv.ss == nil {
		return
	}
	for _, m := range moves {
		k := proposalID{m.OldStream, m.OldSeq}
		if req, ok := sv.ss.pending[k]; ok {
			delete(sv.ss.pending, k)
			sv.ss.pending[proposalID{m.NewStream, m.NewSeq}] = req
		}
	}
}

// sessionAbandon fails sv's session requests of streams older than
// stream: their outcome is unknown, so the server closes their clients'
// connections (server/replicated.go's abandon), and an expiry may be
// tried again.
func (s *Sim) sessionAbandon(sv *server, stream uint64) {
	if sv.ss == nil {
		return
	}
	var ks []proposalID
	for k := range sv.ss.pending {
		if k.stream < stream {
			ks = append(ks, k)
		}
	}
	slices.SortFunc(ks, func(a, b proposalID) int {
		return cmp.Or(cmp.Compare(a.stream, b.stream), cmp.Compare(a.seq, b.seq))
	})
	for _, k := range ks {
		req := sv.ss.pending[k]
		delete(sv.ss.pending, k)
		switch req.kind {
		case reqExpire:
			sv.ss.tracker.UnmarkClosing(req.session)
		case reqConnect, reqReconnect:
			s.toLocker(req.l, req.gen, func() { s.lost(req.l, "request abandoned") })
		default:
			s.closeConn(sv, req.l.session, "request abandoned")
		}
	}
}

// startLockers starts the lock clients.
func (s *Sim) startLockers() {
	for i := 0; i < s.p.Lockers; i++ {
		l := &locker{id: i}
		s.lockers = append(s.lockers, l)
		s.clk.after(s.lrng.Int63n(50_000), func() { s.connect(l) })
	}
}

// toLocker runs fn at l one network delay from now, if l's connection is
// still gen.
func (s *Sim) toLocker(l *locker, gen int, fn func()) {
	s.clk.after(s.net.minUS, func() {
		if l.gen == gen && !s.failed() {
			fn()
		}
	})
}

// toServer runs fn at sv one network delay from now, if sv still runs and
// is not paused (a stopped process answers nothing; the client times out).
func (s *Sim) toServer(sv *server, fn func()) {
	inc := sv.inc
	s.clk.after(s.net.minUS, func() {
		if sv.alive(inc) && !sv.paused && !s.failed() {
			fn()
		}
	})
}

// connect starts a new session of l at a server it picks.
func (s *Sim) connect(l *locker) {
	if s.clk.now >= s.stopClientsAt || s.failed() {
		return
	}
	l.gen++
	gen := l.gen
	all := s.members()
	sv := all[s.lrng.Intn(len(all))]
	s.nextSession++
	l.sv, l.session, l.connected, l.holds, l.busy, l.established = sv, s.nextSession, false, false, false, false
	id := l.session
	s.toServer(sv, func() {
		if !s.servingFor(sv) {
			s.toLocker(l, gen, func() { s.lost(l, "server not serving") })
			return
		}
		s.proposeSession(sv, &sessionReq{kind: reqConnect, l: l, gen: gen, session: id, start: s.clk.now},
			txn.Entry{Session: id, Timeout: int32(s.p.SessionTimeoutUS / 1000), Passwd: []byte("locker"),
				Op: txn.Op{Kind: txn.KindCreateSession}})
	})
	// A handshake that gets no answer in a third of the timeout fails.
	s.clk.after(s.p.SessionTimeoutUS/3, func() {
		if l.gen == gen && !l.connected {
			s.lost(l, "connect timed out")
		}
	})
}

// connected: l's session is established.
func (s *Sim) connected(l *locker, gen int) {
	l.connected, l.established, l.lastHeard = true, true, s.clk.now
	s.note("locker %d: connected to server %d (session %d)", l.id, l.sv.id, l.session)
	s.ping(l, gen)
	s.watchHeard(l, gen)
	s.clk.after(s.lrng.Int63n(20_000), func() { s.acquire(l, gen) })
}

// ping pings l's server every third of the session timeout.
func (s *Sim) ping(l *locker, gen int) {
	s.clk.after(s.p.SessionTimeoutUS/3, func() {
		if l.gen != gen || !l.connected {
			return
		}
		s.request(l, gen, func(sv *server) {
			s.toLocker(l, gen, func() { l.lastHeard = s.clk.now })
		})
		s.ping(l, gen)
	})
}

// watchHeard loses l's connection when its server has been silent for two
// thirds of the session timeout (a ZooKeeper client's read timeout).
func (s *Sim) watchHeard(l *locker, gen int) {
	limit := 2 * s.p.SessionTimeoutUS / 3
	s.clk.after(max(l.lastHeard+limit-s.clk.now, 1), func() {
		if l.gen != gen || !l.connected {
			return
		}
		if s.clk.now-l.lastHeard >= limit {
			s.lost(l, "read timeout")
			return
		}
		s.watchHeard(l, gen)
	})
}

// request sends one of l's requests to its server, which handles it with
// fn if it serves and l's session is connected to it, and closes the
// connection otherwise.
func (s *Sim) request(l *locker, gen int, fn func(sv *server)) {
	sv, id := l.sv, l.session
	s.toServer(sv, func() {
		a, ok := sv.ss.attached[id]
		if !ok || a.gen != gen {
			s.toLocker(l, gen, func() { s.lost(l, "no such connection") })
			return
		}
		if !s.servingFor(sv) {
			s.closeConn(sv, id, "server not serving")
			return
		}
		sv.ss.tracker.Touch(id, simClock{s}.Now())
		fn(sv)
	})
}

// acquire tries to create the lock.
func (s *Sim) acquire(l *locker, gen int) {
	if l.gen != gen || !l.connected || l.busy || l.holds || s.clk.now >= s.stopClientsAt || s.failed() {
		return
	}
	l.busy = true
	id := l.session
	s.request(l, gen, func(sv *server) {
		s.proposeSession(sv, &sessionReq{kind: reqAcquire, l: l, gen: gen, session: id, start: s.clk.now},
			txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate, Path: lockPath,
				Data: []byte{}, ACL: zkproto.OpenACLUnsafe, Flags: zkproto.ModeEphemeral}})
	})
}

// acquired is the answer to l's create of the lock.
func (s *Sim) acquired(l *locker, gen int, code zkproto.Code) {
	l.busy = false
	if code != zkproto.OK {
		s.clk.after(20_000+s.lrng.Int63n(100_000), func() { s.acquire(l, gen) })
		return
	}
	if !s.take(l, "create of "+lockPath+" succeeded") {
		return
	}
	// Held briefly, or for longer than a session lasts without its
	// client (an idle holder, whose lock only its connection keeps).
	hold := 20_000 + s.lrng.Int63n(300_000)
	if s.lrng.Intn(2) == 0 {
		hold = s.p.SessionTimeoutUS + s.lrng.Int63n(2*s.p.SessionTimeoutUS)
	}
	s.clk.after(hold, func() { s.release(l, gen) })
}

// take makes l the holder, unless another client, still connected,
// holds the lock: two holders, which fails the run.
func (s *Sim) take(l *locker, how string) bool {
	for _, o := range s.lockers {
		if o != l && o.holds {
			s.fail(failCorrectness, "two lock holders: locker %d's %s (session %d, server %d) while locker %d still holds it, connected to server %d (session %d, last heard %dus ago)",
				l.id, how, l.session, l.sv.id, o.id, o.sv.id, o.session, s.clk.now-o.lastHeard)
			return false
		}
	}
	l.holds = true
	s.stats.lockAcquires++
	s.note("locker %d: holds the lock (%s; session %d, server %d)", l.id, how, l.session, l.sv.id)
	return true
}

// release stops holding the lock and deletes it.
func (s *Sim) release(l *locker, gen int) {
	if l.gen != gen || !l.holds {
		return
	}
	l.holds, l.busy = false, true
	id := l.session
	s.note("locker %d: releases the lock (session %d)", l.id, id)
	s.request(l, gen, func(sv *server) {
		s.proposeSession(sv, &sessionReq{kind: reqRelease, l: l, gen: gen, session: id, start: s.clk.now},
			txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindDelete, OpCode: zkproto.OpDelete, Path: lockPath, Version: -1}})
	})
}

// released is the answer to l's delete of the lock.
func (s *Sim) released(l *locker, gen int) {
	l.busy = false
	s.clk.after(s.lrng.Int63n(100_000), func() { s.acquire(l, gen) })
}

// lost: l's connection is gone; it no longer counts itself as the holder
// and starts a new session a little later.
func (s *Sim) lost(l *locker, why string) {
	s.note("locker %d: connection to server %d lost (%s; holding: %v)", l.id, l.sv.id, why, l.holds)
	l.gen++
	l.connected, l.holds, l.busy = false, false, false
	s.clk.after(10_000+s.lrng.Int63n(50_000), func() {
		if l.established {
			s.reconnect(l)
		} else {
			s.connect(l)
		}
	})
}

// expired: a server said l's session has ended; it starts a new one.
func (s *Sim) expired(l *locker) {
	l.gen++
	l.connected, l.holds, l.busy, l.established = false, false, false, false
	s.clk.after(s.lrng.Int63n(20_000), func() { s.connect(l) })
}

// reconnect connects l with its session to a server it picks, which
// orders the session's move to itself (server/conn.go's reconnect and
// claimSession) and answers once it is applied.
func (s *Sim) reconnect(l *locker) {
	if s.clk.now >= s.stopClientsAt || s.failed() {
		return
	}
	l.gen++
	gen, id := l.gen, l.session
	all := s.members()
	sv := all[s.lrng.Intn(len(all))]
	l.sv = sv
	s.toServer(sv, func() {
		if !s.servingFor(sv) {
			s.toLocker(l, gen, func() { s.lost(l, "server not serving") })
			return
		}
		if s.p.NoReconnectValidation {
			// The server's own tree vouches for the session.
			if _, ok := sv.tree.Session(id); !ok {
				s.toLocker(l, gen, func() { s.expired(l) })
				return
			}
			s.reconnected(sv, l, gen, id)
			return
		}
		sv.ss.tracker.Touch(id, simClock{s}.Now())
		s.proposeMove(sv, &sessionReq{kind: reqReconnect, l: l, gen: gen, session: id, start: s.clk.now})
	})
	s.clk.after(s.p.SessionTimeoutUS/3, func() {
		if l.gen == gen && !l.connected {
			s.lost(l, "reconnect timed out")
		}
	})
}

// proposeMove proposes the move of req's session to sv.
func (s *Sim) proposeMove(sv *server, req *sessionReq) {
	s.proposeBody(sv, req, sessions.AppendMove([]byte{sessMoveMagic}, req.session, sv.owners.Of(req.session)))
}

// applyMove applies a committed move (server/owners.go's applyMove) and
// answers the reconnect sv filed for it.
func (s *Sim) applyMove(sv *server, cm *replica.Committed) {
	id, from, ok := sessions.ParseMove(cm.Body[1:])
	if !ok {
		s.fail(failCrash, "server %d: undecodable move at %v", sv.id, cm.Zxid)
		return
	}
	_, exists := sv.tree.Session(id)
	code := sv.owners.Move(id, from, cm.Origin, exists, uint64(cm.Zxid))
	s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
	if sv.ss == nil {
		return
	}
	if code == zkproto.OK {
		sv.ss.tracker.Touch(id, simClock{s}.Now())
	}
	if req := sv.takePending(cm); req != nil {
		s.answer(sv, req, code)
	}
}

// reconnected attaches l's session to sv and tells l, with whether its
// ephemeral lock is still there in sv's tree (what a sync and an exists
// would tell a client after the reconnect): then it holds the lock again.
func (s *Sim) reconnected(sv *server, l *locker, gen int, id int64) {
	sv.ss.attached[id] = attachment{l: l, gen: gen}
	st, ok := sv.tree.Stat(lockPath)
	mine := ok && st.EphemeralOwner == id
	s.toLocker(l, gen, func() {
		s.connected(l, gen)
		if mine && s.take(l, "reconnect found its lock") {
			s.clk.after(20_000+s.lrng.Int63n(s.p.SessionTimeoutUS), func() { s.release(l, gen) })
		}
	})
}

// sessionSnapshot resets sv's tracker to the sessions of a snapshot it
// installed.
func (s *Sim) sessionSnapshot(sv *server) {
	if sv.ss != nil {
		sv.ss.tracker.ResetFrom(sv.tree.Sessions(), simClock{s}.Now())
	}
}
