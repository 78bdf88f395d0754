package sim

import (
	"encoding/binary"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// Weak registers drive the early replies of internal/replica (early.go),
// the path of a weak namespace (docs/namespaces.md): the leader answers a
// write to a weak register once it has ordered it, with the result it
// computes on a speculative copy of the register, and the write's origin
// hands that result to its client before the write commits. The leader
// here follows server/weak_ensemble.go's weakLeader, the origin
// server/weak_ensemble.go's early and server/replicated.go's abandon.
//
// The checker holds the run to the weak guarantee:
//   - an answered write that commits commits at the zxid it was answered
//     with and gives the result it was answered with (no mismatch);
//   - one that does not commit was ordered in an epoch that ended (lost
//     with its leader, never for another reason);
//   - what survives of a client connection's acknowledged operations is a
//     prefix of them: after an acknowledged write that was lost, nothing
//     the connection was told succeeded committed.
// Weak registers are left out of the linearizability check (a lost
// acknowledged write is not linearizable, by design); strong ones keep it.

// isWeak reports whether key is one of the run's weak registers.
func (s *Sim) isWeak(key string) bool {
	for i := s.p.Keys - s.p.WeakKeys; i < s.p.Keys; i++ {
		if keyName(i) == key {
			return true
		}
	}
	return false
}

// weakPaths are the znodes of the weak registers.
func (s *Sim) weakPaths() []string {
	var ps []string
	for i := s.p.Keys - s.p.WeakKeys; i < s.p.Keys; i++ {
		ps = append(ps, regPath(keyName(i)))
	}
	return ps
}

// weakLeader is a server's speculative state while it leads: what
// HostConfig.OnLeaderAppend told it, queued until the server takes it
// up, and the copy of the weak registers it answers from.
type weakLeader struct {
	queue     []replica.LeaderAppend
	scheduled bool
	epoch     gpaxos.Epoch
	spec      *datatree.Tree // nil: not leading, or not rebuilt yet
	base      gpaxos.Zxid    // the last entry spec follows
}

// leaderAppend is sv's HostConfig.OnLeaderAppend: it queues la, as the
// production server hands it to a goroutine of its own.
func (s *Sim) leaderAppend(sv *server, la replica.LeaderAppend) {
	w := sv.weak
	w.queue = append(w.queue, la)
	if !w.scheduled {
		w.scheduled = true
		inc := sv.inc
		s.clk.after(0, func() { s.weakStep(sv, inc) })
	}
}

// weakStep follows what sv's node appended while it leads, and sends
// the early replies it gives.
func (s *Sim) weakStep(sv *server, inc int) {
	if sv.inc != inc || !sv.up || s.failed() {
		return
	}
	w := sv.weak
	retry := func() { s.clk.after(s.p.TickUS, func() { s.weakStep(sv, inc) }) }
	if sv.paused {
		retry()
		return
	}
	var out []replica.EarlyReply
	defer func() {
		if len(out) > 0 {
			s.sendAll(sv, replica.EarlyMessages(sv.id, out))
		}
	}()
	for len(w.queue) > 0 {
		la := w.queue[0]
		switch {
		case la.Epoch == 0:
			w.epoch, w.spec = 0, nil
			w.queue = w.queue[1:]
			continue
		case la.Start:
			// The speculative state starts from the committed one, once
			// it holds everything before the log the node tells.
			if sv.applied < la.From {
				retry()
				return
			}
			w.epoch = la.Epoch
			w.spec, w.base = sv.tree.CloneSubtrees(s.weakPaths()), sv.applied
		case la.Epoch != w.epoch || w.spec == nil:
			w.queue = w.queue[1:]
			continue
		}
		w.queue = w.queue[1:]
		for _, a := range la.Entries {
			if a.Zxid <= w.base {
				continue // in the committed state the copy started from
			}
			w.base = a.Zxid
			op, e, ok := decodeRegOp(a.Body)
			if !ok || op.Op == "read" || !s.isWeak(op.Key) {
				continue
			}
			e.Zxid = int64(a.Zxid)
			res := applyReg(w.spec, op, e)
			// The history a new leader adopted is answered when it
			// commits: its origins may have resent it meanwhile.
			if a.Origin == 0 || a.Zxid.Epoch() != la.Epoch {
				continue
			}
			out = append(out, replica.EarlyReply{Origin: a.Origin, Inc: a.Inc, Stream: a.Stream, Seq: a.Seq,
				Zxid: a.Zxid, Result: encodeRegOutput(res)})
		}
	}
	w.scheduled = false
}

// early answers sv's requests that a leader answered early (Delivery.Early).
func (s *Sim) early(sv *server, replies []replica.Early) {
	for _, x := range replies {
		var it *pendingReq
		for _, p := range sv.pending {
			if p.stream == x.Stream && p.seq == x.Seq {
				it = p
				break
			}
		}
		if it == nil || it.early {
			continue
		}
		if it.op.Op == "read" || !s.isWeak(it.op.Key) {
			s.fail(failCorrectness, "weak: server %d was answered early for %s of strong register %s (proposal %x.%d)",
				sv.id, it.op.Op, it.op.Key, x.Stream, x.Seq)
			return
		}
		out, ok := decodeRegOutput(x.Result)
		if !ok {
			s.fail(failCorrectness, "weak: server %d got an unreadable early reply for proposal %x.%d", sv.id, x.Stream, x.Seq)
			return
		}
		it.early, it.earlyOut, it.earlyZxid = true, out, x.Zxid
		s.reply(it.c, it.op, out, x.Zxid, true)
	}
}

// committedEarly checks the committed result of it, a request answered
// early, against its early answer.
func (s *Sim) committedEarly(sv *server, it *pendingReq, cm *replica.Committed, out regOutput) {
	if cm.Zxid != it.earlyZxid || out != it.earlyOut {
		s.fail(failCorrectness, "weak: client %d's %s of %s was answered %+v at %v and committed %+v at %v (server %d)",
			it.c.id, it.op.Op, it.op.Key, it.earlyOut, it.earlyZxid, out, cm.Zxid, sv.id)
	}
}

// checkWeak holds the run's acknowledged operations to the weak
// guarantee (see the top of this file), once every server has converged.
func (s *Sim) checkWeak() {
	if s.p.WeakKeys == 0 || s.failed() {
		return
	}
	type conn struct{ client, segment int }
	lostAt := map[conn]*histOp{}
	for _, op := range s.history {
		if !op.Done || !op.OK || op.Op == "lread" {
			continue
		}
		at, committed := s.chk.committedOps[opID{op.Client, op.seq}]
		k := conn{op.Client, op.segment}
		if lost := lostAt[k]; lost != nil && committed {
			s.fail(failCorrectness, "weak: client %d was told its %s of %s succeeded at %v, which was lost, and then %s %s committed at %v on the same connection",
				op.Client, lost.Op, lost.Key, lost.earlyZxid, op.Op, op.Key, at.zxid)
			return
		}
		if !op.early {
			continue
		}
		s.stats.weakAcks++
		if committed {
			if at.zxid != op.earlyZxid {
				s.fail(failCorrectness, "weak: client %d's %s of %s was answered at %v and committed at %v",
					op.Client, op.Op, op.Key, op.earlyZxid, at)
				return
			}
			continue
		}
		if s.inFlight(op) {
			continue // answered just before the run ended; it commits after
		}
		s.stats.weakLost++
		if !s.chk.epochEnded(op.earlyZxid.Epoch()) {
			s.fail(failCorrectness, "weak: client %d's %s of %s, answered at %v, was lost while its leader's epoch never ended",
				op.Client, op.Op, op.Key, op.earlyZxid)
			return
		}
		if lostAt[k] == nil {
			lostAt[k] = op
		}
	}
}

// inFlight reports whether op's proposal still waits to commit at a
// server that is up.
func (s *Sim) inFlight(op *histOp) bool {
	for _, sv := range s.members() {
		if !sv.up {
			continue
		}
		for _, it := range sv.pending {
			if it.op == op {
				return true
			}
		}
	}
	return false
}

// epochEnded reports whether a leader of a later epoch than e was elected.
func (c *checker) epochEnded(e gpaxos.Epoch) bool {
	for other := range c.leaders {
		if other > e {
			return true
		}
	}
	return false
}

// encodeRegOutput is a register answer as an early reply carries it.
func encodeRegOutput(out regOutput) []byte {
	b := []byte{0}
	if out.OK {
		b[0] = 1
	}
	b = binary.BigEndian.AppendUint32(b, uint32(out.Version))
	return append(b, out.Value...)
}

// decodeRegOutput reads what encodeRegOutput wrote.
func decodeRegOutput(b []byte) (regOutput, bool) {
	if len(b) < 5 {
		return regOutput{}, false
	}
	return regOutput{OK: b[0] == 1, Version: int32(binary.BigEndian.Uint32(b[1:])), Value: string(b[5:])}, true
}
