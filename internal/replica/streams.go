package replica

import (
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// This file is the origin's side of proposal streams: how this server's
// proposals reach the leader exactly once and in the order Propose was
// called, across lost messages, slow disks and leader changes.
//
// Each proposal carries (origin, stream, seq). The leader's sequencer
// (sequencer.go) appends a stream's proposals only in sequence, without
// gaps, and drops what it already appended. So the origin may resend any
// suffix of what it sent, with the same numbers, and the leader's log
// holds each proposal once:
//   - When none of the origin's proposals has committed for the resend
//     interval, every proposal in flight is resent (a message was lost,
//     or the leader is slow); the interval doubles while nothing commits,
//     so an overloaded leader is not flooded. While they commit, nothing
//     before them was lost, however long the oldest has waited, and
//     nothing is resent: resending a queue only lengthens it.
//   - A new leader's sequencer starts empty, so every change of the leader
//     the origin sends to (its promised epoch, or the server it was
//     promised to) starts a new stream, before anything is sent to the
//     new one. Proposals sent to an earlier leader may or may not be in the
//     new leader's history. A proposal carries the epoch it was sent under
//     and only that epoch's leader appends it, as an entry of that epoch;
//     every entry of older epochs that will ever commit precedes the
//     newer one. So the origin sends nothing until it applies an entry of
//     an epoch newer than any it sent under: whatever of its own it has
//     not seen committed by then never will be. A proposal sent to a
//     candidate that lost its epoch (the origin then learns that epoch's
//     real leader) was never appended and does not count. The origin then
//     resends those, and everything proposed meanwhile, on the new stream,
//     and tells the application their new numbers (Delivery.Resent).
//     Clients of this server see nothing of the leader change but a delay.
//   - A snapshot installed while proposals are in flight may hold some of
//     them, which the origin cannot tell: it abandons them (a new stream;
//     the application fails their requests, Delivery.Abandoned), as it does
//     when a leader change takes longer than the settle timeout.

// inflight is one of this server's proposals that it has not seen
// committed, in Propose order.
type inflight struct {
	stream, seq uint64
	data        []byte // the whole proposal, header included
	sent        bool
	replied     bool      // answered early by a leader (early.go)
	at          time.Time // when it was last sent
	to          leaderKey // the leader it was last sent to
}

// Resend is a proposal that moved to a new stream: the application files
// it under the new numbers from now on.
type Resend struct {
	OldStream, OldSeq, NewStream, NewSeq uint64
}

// streams is the run loop's state for this server's proposals.
type streams struct {
	inflight []inflight
	// resyncing: the leader changed while proposals were in flight; none
	// is sent until an entry of an epoch newer than resyncAfter commits.
	resyncing   bool
	resyncAfter gpaxos.Epoch
	resyncSince time.Time
	// resendEvery is the current resend interval (it doubles while nothing
	// commits); lastProgress is when one of ours last committed.
	resendEvery  time.Duration
	lastProgress time.Time
	// pendingResent, pendingEarly and pendingAbandon are news the
	// application has not been told yet.
	pendingResent  []Resend
	pendingEarly   []Early
	pendingAbandon uint64
	// resent counts the proposals sent again because their stream stopped
	// moving (Host.Resent).
	resent uint64
}

// takeNews moves the news of the streams into d, in the order the
// application must take them: moves, then early replies (filed under the
// numbers the moves gave), then an abandoned stream.
func (h *Host) takeNews(d *Delivery) {
	s := &h.streams
	d.Resent, s.pendingResent = s.pendingResent, nil
	// An early reply to a proposal committed since it arrived comes too
	// late: the commit, delivered first, answers it.
	d.Early = s.pendingEarly[:0:0]
	for _, e := range s.pendingEarly {
		if s.find(e.Stream, e.Seq) >= 0 {
			d.Early = append(d.Early, e)
		}
	}
	s.pendingEarly = nil
	d.Abandoned, s.pendingAbandon = s.pendingAbandon, 0
}

// TakeQueued moves what Propose queued into the protocol.
func (h *Host) TakeQueued() {
	h.seqMu.Lock()
	q := h.queue
	h.queue = nil
	cur := h.stream
	h.seqMu.Unlock()
	for _, data := range q {
		// Proposals of a stream abandoned since they were made are
		// dropped: the application fails them.
		if hd, _, _ := parseHeader(data); hd.Stream == cur {
			h.streams.inflight = append(h.streams.inflight, inflight{stream: hd.Stream, seq: hd.Seq, data: data})
		}
	}
	h.sendUnsent()
}

// sendUnsent sends the proposals not sent yet, unless the origin waits for
// a leader change to settle or knows no leader.
func (h *Host) sendUnsent() {
	h.watchLeader()
	s := &h.streams
	if s.resyncing {
		return
	}
	var batch [][]byte
	for i := range s.inflight {
		if !s.inflight[i].sent {
			batch = append(batch, s.inflight[i].data)
		}
	}
	if len(batch) == 0 || !h.sendBatch(batch) {
		return
	}
	now := h.cfg.Clock.Now()
	for i := range s.inflight {
		if !s.inflight[i].sent {
			s.inflight[i].sent, s.inflight[i].at, s.inflight[i].to = true, now, h.leaderSeen
		}
	}
	if len(s.inflight) == len(batch) {
		s.lastProgress = now // nothing was waiting before these
	}
}

// sendBatch hands proposals to the protocol: the leader appends them; any
// other server forwards them to the leader in one message (one message per
// proposal would flood the transport's queues under load and lose some).
// It reports false when no leader is known.
func (h *Host) sendBatch(batch [][]byte) bool {
	st := h.node.Status()
	if st.Leader {
		if h.seqr.next == nil || h.seqr.epoch != st.HardState.Promised {
			h.seqr.reset(st.HardState.Promised)
		}
		for _, data := range batch {
			if hd, body, _ := parseHeader(data); h.seqr.admit(hd) {
				h.leaderReceived(hd.Origin, body)
				h.node.Propose(data)
			}
		}
		return true
	}
	leader := st.HardState.Leader
	if leader == gpaxos.None || leader == h.id {
		return false
	}
	ents := make([]gpaxos.Entry, len(batch))
	for i, data := range batch {
		ents[i] = gpaxos.Entry{Type: gpaxos.EntryNormal, Data: data}
	}
	// The epoch says which leader the proposals are for: only that one
	// may append them (Host.Step).
	h.cfg.Send(gpaxos.Message{Type: gpaxos.MsgProp, From: h.id, Inc: h.inc, To: leader, Epoch: st.HardState.Promised, Entries: ents})
	return true
}

// tickStreams resends what has waited too long and gives up on a leader
// change that does not settle.
func (h *Host) tickStreams() {
	s := &h.streams
	now := h.cfg.Clock.Now()
	if s.resyncing {
		if now.Sub(s.resyncSince) > h.settleTimeout() {
			h.abandon(fmt.Sprintf("the leader change did not settle within %v", h.settleTimeout()))
		}
		return
	}
	h.sendUnsent()
	if len(s.inflight) == 0 || !s.inflight[0].sent || now.Sub(s.stalledSince()) < s.resendEvery {
		return
	}
	var batch [][]byte
	for i := range s.inflight {
		if s.inflight[i].sent {
			batch = append(batch, s.inflight[i].data)
			s.inflight[i].at = now
		}
	}
	if h.sendBatch(batch) {
		s.resendEvery = min(2*s.resendEvery, h.cfg.ProposalTimeout)
		s.resent += uint64(len(batch))
	}
}

// stalledSince is when the stream last moved: the later of the last send of
// the oldest proposal in flight and the last commit of one of this
// server's proposals. The leader appends a stream in order and without
// gaps, so while this server's proposals keep committing none before them
// was lost: the oldest one in flight is waiting in a queue, and resending
// everything in flight (possibly thousands of proposals) would only make
// that queue longer, and every proposal later, until the resends are all
// there is. Only a stream that stopped moving for the interval has lost
// something.
func (s *streams) stalledSince() time.Time {
	if s.lastProgress.After(s.inflight[0].at) {
		return s.lastProgress
	}
	return s.inflight[0].at
}

// watchLeader starts a new stream when the leader proposals are sent to
// changes, so that nothing reaches the new leader's empty sequencer in the
// middle of a stream. Proposals that may be in an earlier leader's history
// wait until the new history settles (resyncing); with none, the proposals
// in flight move to the new stream at once.
func (h *Host) watchLeader() {
	hs := h.node.Status().HardState
	k := leaderKey{epoch: hs.Promised, leader: hs.Leader}
	if k == h.leaderSeen {
		return
	}
	h.leaderSeen = k
	s := &h.streams
	// A promise names one server per epoch, and the node changes whom it
	// follows within an epoch only on that epoch's real leader's history:
	// what was sent to another server under the same epoch went to a
	// candidate that lost, which appended nothing.
	var after gpaxos.Epoch
	waiting := false
	for _, p := range s.inflight {
		lost := p.to.epoch == k.epoch && k.leader != gpaxos.None && p.to.leader != k.leader
		if p.sent && !lost {
			after, waiting = max(after, p.to.epoch), true
		}
	}
	if !waiting {
		h.finishResync()
		return
	}
	if !s.resyncing {
		s.resyncSince = h.cfg.Clock.Now()
		h.logger.Debug("leader changed with proposals in flight; resending once settled",
			"leader", k.leader, "epoch", k.epoch, "in_flight", len(s.inflight))
	}
	s.resyncing, s.resyncAfter = true, after
}

// ownCommitted retires this server's proposals up to the one committed
// entry e carries, and ends a resynchronization once an entry of a newer
// epoch than any proposal in flight was sent under has committed.
func (h *Host) ownCommitted(z gpaxos.Zxid, hd proposalHeader, own bool) {
	s := &h.streams
	if own {
		for len(s.inflight) > 0 && s.inflight[0].stream == hd.Stream && s.inflight[0].seq <= hd.Seq {
			s.inflight = s.inflight[1:]
			s.lastProgress, s.resendEvery = h.cfg.Clock.Now(), h.resendBase()
		}
	}
	if s.resyncing && z.Epoch() > s.resyncAfter {
		h.finishResync()
	}
}

// finishResync moves every proposal in flight, and those Propose queued
// meanwhile, to a new stream, in order, and sends them: when a leader
// change settles, or at once when nothing sent before it can commit.
func (h *Host) finishResync() {
	s := &h.streams
	settled := s.resyncing
	// A proposal answered early and still in flight did not commit with
	// the leader that ordered it, and must not be ordered again (early.go).
	s.dropUndelivered()
	if s.anyAnswered() {
		h.abandon("proposals answered early were lost with the leader that ordered them")
		return
	}
	h.seqMu.Lock()
	h.stream++
	next := uint64(0)
	mv := s.mover()
	for i := range s.inflight {
		next++
		mv.move(s.inflight[i].stream, s.inflight[i].seq, h.stream, next)
		s.inflight[i] = h.renumbered(s.inflight[i].data, h.stream, next)
	}
	for i, data := range h.queue {
		next++
		hd, _, _ := parseHeader(data)
		mv.move(hd.Stream, hd.Seq, h.stream, next)
		h.queue[i] = h.renumbered(data, h.stream, next).data
	}
	h.seq = next
	h.seqMu.Unlock()
	s.resyncing = false
	if settled && len(s.inflight) > 0 {
		h.logger.Info("leader change settled; resending proposals in flight", "count", len(s.inflight))
	}
	h.sendUnsent()
}

// resendMover records proposals' moves to a new stream in pendingResent.
type resendMover struct {
	s *streams
	// at finds a move the application has not been told yet by the numbers
	// it moved to.
	at map[[2]uint64]int
}

// mover returns a resendMover over the moves not yet delivered.
func (s *streams) mover() resendMover {
	m := resendMover{s: s}
	if len(s.pendingResent) > 0 {
		m.at = make(map[[2]uint64]int, len(s.pendingResent))
		for i, r := range s.pendingResent {
			m.at[[2]uint64{r.NewStream, r.NewSeq}] = i
		}
	}
	return m
}

// move records that the proposal numbered (stream, seq) is now (to, seq2).
// A proposal that already moved since the last Delivery moves again: the
// application, which knows it by its numbers before both moves, learns
// only the composed one, so one Delivery never names a proposal twice.
func (m resendMover) move(stream, seq, to, seq2 uint64) {
	if i, ok := m.at[[2]uint64{stream, seq}]; ok {
		m.s.pendingResent[i].NewStream, m.s.pendingResent[i].NewSeq = to, seq2
		return
	}
	m.s.pendingResent = append(m.s.pendingResent, Resend{OldStream: stream, OldSeq: seq, NewStream: to, NewSeq: seq2})
}

// renumbered returns proposal data under a new stream and sequence number.
func (h *Host) renumbered(data []byte, stream, seq uint64) inflight {
	hd, body, _ := parseHeader(data)
	hd.Stream, hd.Seq = stream, seq
	out := hd.append(make([]byte, 0, headerLen+len(body)))
	return inflight{stream: stream, seq: seq, data: append(out, body...)}
}

// abandon starts a new stream, drops everything in flight and tells the
// application, which fails the requests waiting for them.
func (h *Host) abandon(why string) {
	h.seqMu.Lock()
	h.stream++
	h.seq = 0
	stream := h.stream
	h.seqMu.Unlock()
	s := &h.streams
	if len(s.inflight) > 0 {
		h.logger.Info("abandoning proposals", "count", len(s.inflight), "why", why)
	}
	s.inflight, s.resyncing, s.pendingResent, s.pendingEarly = nil, false, nil, nil
	s.pendingAbandon = stream
}

// settleTimeout is how long a leader change may take to settle before the
// proposals in flight are abandoned.
func (h *Host) settleTimeout() time.Duration {
	if h.cfg.SettleTimeout > 0 {
		return h.cfg.SettleTimeout
	}
	return h.cfg.ProposalTimeout
}

// resendBase is the first resend interval after progress: an election
// timeout, long enough not to resend under an ordinary fsync.
func (h *Host) resendBase() time.Duration {
	return time.Duration(h.cfg.Node.ElectionTicks) * h.cfg.Tick
}
