package replica

import (
	"encoding/binary"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// This file is early replies: a way for the leader's application to answer
// a proposal once the leader has ordered it, before a quorum holds it (the
// weak namespaces of docs/namespaces.md).
//
// At the leader, OnLeaderAppend hears every entry the node appends, before
// it is durable; the application computes a result on its speculative
// state and sends it back with SendEarly. The origin's host takes an early
// reply only for a proposal still in flight under the numbers it names,
// marks it answered, and hands it to its application (Delivery.Early)
// after every earlier news of its streams, so that the application files
// it under the numbers it knows.
//
// An answered proposal must never be ordered a second time: the client was
// told its result at its place in the order, and a copy ordered later
// could have another. So when a leader change settles with an answered
// proposal still in flight (it was lost with the leader that ordered it),
// the origin abandons its stream instead of resending it, and the
// application fails every request waiting on it. An early reply the
// application has not been given yet when the change settles is dropped
// instead, and its proposal resent: nobody was told.

// Appended is an entry the leader's node ordered, as OnLeaderAppend tells
// it.
type Appended struct {
	Zxid gpaxos.Zxid
	// Origin, Inc, Stream and Seq identify the proposal (Propose), and
	// Body is what its origin passed to Propose; all are zero for an entry
	// that is not a proposal (a no-op, a configuration change).
	Origin      gpaxos.ID
	Inc         uint64
	Stream, Seq uint64
	Body        []byte
}

// LeaderAppend is what the leader's node appended in one Ready, before it
// is durable (HostConfig.OnLeaderAppend).
type LeaderAppend struct {
	// Epoch is the epoch the server leads; zero when it has stopped
	// leading (Entries is then empty).
	Epoch gpaxos.Epoch
	// Start marks the first LeaderAppend of Epoch. Entries then hold the
	// whole log after From (the node's snapshot index): the history the
	// leader adopted, which commits before anything it orders, and its
	// first entries. Later ones hold the entries the leader ordered since,
	// in zxid order.
	Start   bool
	From    gpaxos.Zxid
	Entries []Appended
	// Commit is the leader's commit point as of this Ready; a LeaderAppend
	// without Entries tells that it advanced.
	Commit gpaxos.Zxid
}

// EarlyReply is the result the leader's application computed for a
// proposal it ordered, on its way to the proposal's origin (SendEarly).
type EarlyReply struct {
	Origin      gpaxos.ID
	Inc         uint64
	Stream, Seq uint64
	Zxid        gpaxos.Zxid
	Result      []byte
}

// Early is an early reply to one of this server's proposals, as its
// application receives it (Delivery.Early).
type Early struct {
	Stream, Seq uint64
	Zxid        gpaxos.Zxid
	Result      []byte
}

// earlyHeaderLen is the size of an early reply's header in an entry of a
// MsgEarlyReply: the origin's incarnation, stream and sequence number.
const earlyHeaderLen = 24

// earlyMessage builds the message carrying replies, all for one origin.
func earlyMessage(from gpaxos.ID, replies []EarlyReply) gpaxos.Message {
	m := gpaxos.Message{Type: gpaxos.MsgEarlyReply, From: from, To: replies[0].Origin,
		Entries: make([]gpaxos.Entry, len(replies))}
	for i, r := range replies {
		b := make([]byte, 0, earlyHeaderLen+len(r.Result))
		b = binary.BigEndian.AppendUint64(b, r.Inc)
		b = binary.BigEndian.AppendUint64(b, r.Stream)
		b = binary.BigEndian.AppendUint64(b, r.Seq)
		m.Entries[i] = gpaxos.Entry{Zxid: r.Zxid, Type: gpaxos.EntryNormal, Data: append(b, r.Result...)}
	}
	return m
}

// parseEarly reads one entry of a MsgEarlyReply; ok is false when it is
// too short to hold the header.
func parseEarly(e gpaxos.Entry) (inc uint64, early Early, ok bool) {
	if len(e.Data) < earlyHeaderLen {
		return 0, Early{}, false
	}
	inc = binary.BigEndian.Uint64(e.Data)
	early = Early{Stream: binary.BigEndian.Uint64(e.Data[8:]), Seq: binary.BigEndian.Uint64(e.Data[16:]),
		Zxid: e.Zxid, Result: e.Data[earlyHeaderLen:]}
	return inc, early, true
}

// leaderAppended tells OnLeaderAppend what rd, the Ready NextReady is about
// to return, appends at the leader (see LeaderAppend).
func (h *Host) leaderAppended(rd *gpaxos.Ready) {
	if h.cfg.OnLeaderAppend == nil {
		return
	}
	st := h.node.Status()
	if !st.Leader {
		if h.appendEpoch != 0 {
			h.appendEpoch = 0
			h.cfg.OnLeaderAppend(LeaderAppend{})
		}
		return
	}
	epoch, commit := st.HardState.Promised, st.HardState.Commit
	if epoch != h.appendEpoch {
		h.appendEpoch, h.appendCommit, h.appendLast = epoch, commit, st.Last
		h.cfg.OnLeaderAppend(LeaderAppend{Epoch: epoch, Start: true, From: st.SnapIndex,
			Entries: appendedViews(h.node.Entries(st.SnapIndex, st.Last)), Commit: commit})
		return
	}
	// Entries the node ordered during an fsync come in an overlapped
	// Ready's Ordered, and again in the next Ready's Entries, to persist.
	var own []gpaxos.Entry
	for _, ents := range [][]gpaxos.Entry{rd.Ordered, rd.Entries} {
		for _, e := range ents {
			if e.Zxid.Epoch() == epoch && e.Zxid > h.appendLast {
				own = append(own, e)
				h.appendLast = e.Zxid
			}
		}
	}
	if len(own) > 0 || commit > h.appendCommit {
		h.appendCommit = commit
		h.cfg.OnLeaderAppend(LeaderAppend{Epoch: epoch, Entries: appendedViews(own), Commit: commit})
	}
}

// appendedViews describes log entries for OnLeaderAppend.
func appendedViews(ents []gpaxos.Entry) []Appended {
	out := make([]Appended, len(ents))
	for i, e := range ents {
		out[i].Zxid = e.Zxid
		if e.Type != gpaxos.EntryNormal {
			continue
		}
		if hd, body, err := parseHeader(e.Data); err == nil {
			out[i].Origin, out[i].Inc, out[i].Stream, out[i].Seq, out[i].Body = hd.Origin, hd.Inc, hd.Stream, hd.Seq, body
		}
	}
	return out
}

// receiveEarly hands the application the early replies m carries that are
// for this incarnation's proposals in flight under the numbers they name
// and not answered yet, at once: the commits that the driver may step
// before its next Ready would make them late. The others (late,
// duplicated, for a proposal resent or committed since) are dropped.
func (h *Host) receiveEarly(m gpaxos.Message) {
	if !h.cfg.AcceptEarly {
		return
	}
	s := &h.streams
	filed := len(s.pendingEarly)
	defer func() {
		if len(s.pendingEarly) > filed {
			var d Delivery
			h.takeNews(&d)
			h.cfg.Deliver(d)
		}
	}()
	for _, e := range m.Entries {
		inc, early, ok := parseEarly(e)
		if !ok || inc != h.inc {
			continue
		}
		i := s.find(early.Stream, early.Seq)
		if i < 0 || s.inflight[i].replied {
			continue
		}
		s.inflight[i].replied = true
		s.pendingEarly = append(s.pendingEarly, early)
	}
}

// find returns the position in inflight of the proposal numbered (stream,
// seq), or -1.
func (s *streams) find(stream, seq uint64) int {
	for i := range s.inflight {
		if s.inflight[i].stream == stream && s.inflight[i].seq == seq {
			return i
		}
	}
	return -1
}

// dropUndelivered forgets the early replies the application has not been
// given yet: their proposals count as unanswered again.
func (s *streams) dropUndelivered() {
	for _, early := range s.pendingEarly {
		if i := s.find(early.Stream, early.Seq); i >= 0 {
			s.inflight[i].replied = false
		}
	}
	s.pendingEarly = nil
}

// anyAnswered reports whether a proposal in flight was answered early.
func (s *streams) anyAnswered() bool {
	for i := range s.inflight {
		if s.inflight[i].replied {
			return true
		}
	}
	return false
}

// SendEarly sends early replies to their origins, in one message per
// origin; those for this server's own proposals go to its own host. Like
// every message, they may be lost: the proposal is then answered when it
// commits. Safe for concurrent use.
func (r *Replica) SendEarly(replies []EarlyReply) {
	for _, m := range EarlyMessages(r.cfg.ID, replies) {
		if m.To != r.cfg.ID {
			r.cfg.Transport.Send(m)
			continue
		}
		r.earlyMu.Lock()
		r.earlyLocal = append(r.earlyLocal, m)
		r.earlyMu.Unlock()
		select {
		case r.earlyWake <- struct{}{}:
		default:
		}
	}
}

// EarlyMessages are the messages that carry replies from the leader from
// to their origins: one MsgEarlyReply per origin, the replies of each in
// the order given. A host steps each at its origin (a driver other than
// Replica sends them itself).
func EarlyMessages(from gpaxos.ID, replies []EarlyReply) []gpaxos.Message {
	var ms []gpaxos.Message
	for len(replies) > 0 {
		origin := replies[0].Origin
		var batch, rest []EarlyReply
		for _, x := range replies {
			if x.Origin == origin {
				batch = append(batch, x)
			} else {
				rest = append(rest, x)
			}
		}
		replies = rest
		ms = append(ms, earlyMessage(from, batch))
	}
	return ms
}

// takeLocalEarly steps the early replies SendEarly queued for this
// server's own proposals; the run loop calls it.
func (r *Replica) takeLocalEarly() {
	r.earlyMu.Lock()
	ms := r.earlyLocal
	r.earlyLocal = nil
	r.earlyMu.Unlock()
	for _, m := range ms {
		r.host.Step(m)
	}
}
