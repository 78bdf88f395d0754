package server

import (
	"fmt"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// Weak writes in an ensemble (weak.go has the rules). The leader follows
// what its node appends with a speculative state and sends each weak
// write's result to the write's origin as soon as it is appended, before
// it is durable anywhere (replica's early replies); the origin answers its
// client from it, in the connection's order, and checks the result again
// when the write commits. A new leader builds its speculative state from
// its committed state and the history it adopted, which commits before
// anything it orders. An origin never orders again a write it answered
// early (replica.Delivery.Early): if the write is lost with its leader,
// the requests behind it fail and the client's next handshake tells it
// its session ended (lostZxid).

// weakLeader answers weak writes at the leader. It runs on its own
// goroutine, so that neither the replica's loop, which tells it what the
// node appends (hear), nor the applier waits for it.
type weakLeader struct {
	r    *replicated
	mu   sync.Mutex
	in   []replica.LeaderAppend
	wake chan struct{}

	// gated: the dynamicfsync mode, where a weak write is answered only
	// once every entry before it committed.
	gated bool

	// Owned by run.
	epoch gpaxos.Epoch
	spec  *spec
	base  gpaxos.Zxid // the last entry the speculative state follows
	held  []heldReply // gated replies, in log order
}

// heldReply is an early reply the dynamicfsync mode holds until the entry
// before its own (after) commits.
type heldReply struct {
	after gpaxos.Zxid
	reply replica.EarlyReply
}

func newWeakLeader(r *replicated) *weakLeader {
	return &weakLeader{r: r, wake: make(chan struct{}, 1)}
}

// hear queues what the leader's node appended (replica.Config.OnLeaderAppend).
func (w *weakLeader) hear(la replica.LeaderAppend) {
	w.mu.Lock()
	w.in = append(w.in, la)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (w *weakLeader) run(stop <-chan struct{}) {
	for {
		select {
		case <-w.wake:
		case <-stop:
			return
		}
		w.mu.Lock()
		in := w.in
		w.in = nil
		w.mu.Unlock()
		for _, la := range in {
			if !w.step(la, stop) {
				return
			}
		}
	}
}

// step follows one LeaderAppend and sends the early replies it gives; it
// returns false once the server stops.
func (w *weakLeader) step(la replica.LeaderAppend, stop <-chan struct{}) bool {
	switch {
	case la.Epoch == 0:
		w.epoch, w.spec, w.held = 0, nil, nil
		return true
	case la.Start:
		w.epoch, w.spec, w.held = la.Epoch, nil, nil
		if !w.rebuild(la.From, stop) {
			return false
		}
	case la.Epoch != w.epoch || w.spec == nil:
		return true
	}
	var out []replica.EarlyReply
	for _, a := range la.Entries {
		if a.Zxid <= w.base {
			continue // in the committed state the speculative one started from
		}
		prev := w.base
		w.base = a.Zxid
		res, answer := w.spec.body(a.Zxid, a.Origin, a.Body)
		// The history a new leader adopted is answered when it commits:
		// its origins may have resent it meanwhile.
		if !answer || a.Zxid.Epoch() != la.Epoch {
			continue
		}
		reply := replica.EarlyReply{Origin: a.Origin, Inc: a.Inc, Stream: a.Stream, Seq: a.Seq,
			Zxid: a.Zxid, Result: txn.MarshalResult(nil, &res)}
		if w.gated {
			w.held = append(w.held, heldReply{after: prev, reply: reply})
		} else {
			out = append(out, reply)
		}
	}
	for len(w.held) > 0 && w.held[0].after <= la.Commit {
		out = append(out, w.held[0].reply)
		w.held = w.held[1:]
	}
	if len(out) > 0 {
		w.r.rep.SendEarly(out)
	}
	return true
}

// rebuild makes the speculative state a copy of this server's committed
// state once it has applied up to from (the log's first entry after its
// snapshot, so that every entry after the copy is in what the leader's
// node tells). It returns false once the server stops.
func (w *weakLeader) rebuild(from gpaxos.Zxid, stop <-chan struct{}) bool {
	s := w.r.s
	for {
		s.treeMu.RLock()
		if w.r.applied.Load() >= int64(from) {
			w.spec = newSpec(s.cfg.Namespaces, s.tree, w.r.owners, s.log)
			w.base = gpaxos.Zxid(w.r.applied.Load())
			s.treeMu.RUnlock()
			return true
		}
		s.treeMu.RUnlock()
		select {
		case <-stop:
			return false
		case <-time.After(time.Millisecond):
		}
	}
}

// weakBody reports whether a proposal body is a client's weak write
// (replica.Config.SkipSync in the dynamicfsync mode).
func weakBody(tab nsmap.Table, body []byte) bool {
	if len(body) == 0 || body[0] != bodyTxn {
		return false
	}
	e, err := txn.Unmarshal(body[1:])
	return err == nil && weakOnly(tab, e)
}

// early answers this server's weak writes whose results a leader sent once
// it had ordered them (replica.Delivery.Early). The tree lock is held.
func (r *replicated) early(replies []replica.Early) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range replies {
		it := r.find(x.Stream, x.Seq)
		if it == nil || it.pr.early == nil {
			continue
		}
		res, err := txn.UnmarshalResult(x.Result)
		if err != nil {
			r.s.log.Error("undecodable early reply", "zxid", fmt.Sprintf("0x%x", uint64(x.Zxid)), "err", err)
			continue
		}
		it.pr.early(res, int64(x.Zxid))
	}
}

// find returns the pending item ordered as (stream, seq), or nil; r.mu is
// held.
func (r *replicated) find(stream, seq uint64) *pendingItem {
	for _, it := range r.pending {
		if it.ordered && it.stream == stream && it.seq == seq {
			return it
		}
	}
	return nil
}

// answeredEarly reports whether it's reply was sent before its entry
// committed.
func (it *pendingItem) answeredEarly() bool {
	return it.pr.earlyResult != nil && it.pr.conn != nil && it.pr.conn.order.sent(it.pr)
}

// epochEnds remembers where the epochs this server saw end ended: the
// last committed zxid of each. A zxid of such an epoch beyond its end was
// never committed, and never will be: a client that saw it was told of a
// weak write lost with its leader (Server.lostZxid). It learns an end when
// it applies the first entry of a later epoch, so it knows nothing of the
// epochs that ended before a snapshot it started from. The applier keeps
// it, under the tree lock.
type epochEnds struct {
	last int64 // the last zxid applied
	ends map[uint32]int64
}

// maxEpochEnds bounds how many epochs epochEnds remembers: a client
// reconnects within its session timeout, a few elections at most.
const maxEpochEnds = 64

// applied records that zxid z was applied next.
func (x *epochEnds) applied(z int64) {
	prev := uint32(uint64(x.last) >> 32)
	if uint32(uint64(z)>>32) != prev && x.last != 0 {
		if x.ends == nil {
			x.ends = map[uint32]int64{}
		}
		x.ends[prev] = x.last
		if len(x.ends) > maxEpochEnds {
			oldest := prev
			for e := range x.ends {
				oldest = min(oldest, e)
			}
			delete(x.ends, oldest)
		}
	}
	x.last = z
}

// restored starts over from a snapshot at z.
func (x *epochEnds) restored(z int64) { x.last, x.ends = z, nil }

// lost reports whether z, a zxid a client saw, was never committed: its
// epoch ended, here, before it.
func (x *epochEnds) lost(z int64) bool {
	end, ok := x.ends[uint32(uint64(z)>>32)]
	return ok && z > end
}

// lostZxid reports whether z, the last zxid a reconnecting client saw, is
// of a weak write answered early and then lost with its leader: every
// request the client made after it failed with it (replica.Delivery.Early),
// and the session must end, so that no later write of it is applied
// without the ones it was told had succeeded.
func (s *Server) lostZxid(z int64) bool {
	rp, ok := s.pipe.(*replicated)
	if !ok || len(weakRoots(s.cfg.Namespaces)) == 0 {
		return false
	}
	s.treeMu.RLock()
	defer s.treeMu.RUnlock()
	return rp.ends.lost(z)
}

// endLostSession ends session id, whose client saw zxid z that was lost
// (lostZxid), through the log, and tells the client its session expired.
func (c *conn) endLostSession(id, z int64) string {
	s := c.s
	s.log.Warn("a client saw a weak write that was lost with its leader; ending its session",
		"remote", c.nc.RemoteAddr().String(), "session", sessionHex(id), "client_zxid", fmt.Sprintf("0x%x", uint64(z)))
	if !s.sessions.MarkClosing(id) {
		return c.refuseExpired(id)
	}
	closed := make(chan struct{})
	e := &txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCloseSession}}
	if !s.pipe.submit(&proposal{entry: e, conn: c, applied: func(txn.Result, *txn.Entry) {
		s.sessions.Remove(id)
		close(closed)
	}, abandoned: func() { s.sessions.UnmarkClosing(id) }}) {
		return "server shutting down"
	}
	select {
	case <-closed:
	case <-c.done:
		return "closed during handshake"
	}
	return c.refuseExpired(id)
}
