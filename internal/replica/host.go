package replica

import (
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Clock tells the time a host measures its resend intervals and timeouts
// by: the wall clock for a Replica, virtual time in the simulator.
type Clock interface {
	Now() time.Time
}

// HostConfig configures a Host.
type HostConfig struct {
	// Node is the node's configuration; Incarnation and Recovering come
	// from the storage's identity.
	Node gpaxos.Config
	// Boots is the storage's count of starts: the first proposal stream
	// is Boots<<32, larger than any stream of an earlier start.
	Boots uint64
	// Tick is the length of one protocol tick; ProposalTimeout and
	// SettleTimeout as in Config.
	Tick, ProposalTimeout, SettleTimeout time.Duration
	// Clock; required.
	Clock Clock
	// Send puts a message on the network; required. It must not block for
	// long.
	Send func(gpaxos.Message)
	// Deliver hands the application its next Delivery, in order; required.
	Deliver func(Delivery)
	// OnConfig: see Config.OnConfig.
	OnConfig func(voters quorum.Config, context []byte)
	// OnRecovered, when set, is called once a host that started in
	// recovery (Node.Recovering) votes again, so that the storage can
	// clear its mark; an error stops the host's driver.
	OnRecovered func() error
	// OnLeaderReceived, when set, hears at the leader of every proposal it
	// admits, own or forwarded, before it is ordered: the body as the
	// origin passed it to Propose. It lets the leader act on what is on
	// its way without waiting for the log behind it (sessions' liveness);
	// it must not block.
	OnLeaderReceived func(origin gpaxos.ID, body []byte)
	// OnLeaderAppend, when set, hears at the leader of the entries its
	// node appends, before they are durable (early.go); it must not block.
	OnLeaderAppend func(LeaderAppend)
	// AcceptEarly: this server's application takes early replies to its
	// proposals (Delivery.Early); without it they are dropped, and the
	// proposals are resent across leader changes as usual.
	AcceptEarly bool
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Host is one server's Group Paxos node with everything the protocol
// needs around it but goroutines, files and a clock of its own: the
// proposal streams and the leader's sequencer (streams.go, sequencer.go),
// the conversion of committed entries into Deliveries, the recovery mark.
// A Replica drives one from its goroutine over a real clock, storage and
// transport; the simulator drives many over simulated ones, so that what
// it checks is the code that runs.
//
// Propose may be called from any goroutine; every other method must be
// called from the driver's one goroutine. The driver's cycle is: feed the
// host (Step, Tick, TakeQueued, ...), then, until NextReady says the host
// is quiet, send the Ready's Early messages, make its state durable, and
// call Persisted; or, persisting off its loop, keep feeding the host and
// taking overlapped Readies until the state is durable.
type Host struct {
	cfg    HostConfig
	id     gpaxos.ID
	inc    uint64
	node   *gpaxos.Node
	logger *slog.Logger

	// seqMu guards the current stream, the last sequence number handed out
	// and the queue of proposals not yet taken: Propose assigns them in
	// the caller's goroutine so that the application knows them before the
	// proposal leaves.
	seqMu  sync.Mutex
	stream uint64
	seq    uint64
	queue  [][]byte

	// The driver's goroutine owns the rest.
	streams    streams
	seqr       sequencer
	leaderSeen leaderKey
	roleSeen   roleKey
	local      []gpaxos.Message
	recovering bool
	// repairedAt is the commit point when a host that started in recovery
	// was registered (0 until then): see Status.RepairedAt.
	repairedAt gpaxos.Zxid
	// appendEpoch, appendCommit and appendLast are the epoch, commit
	// point and last entry OnLeaderAppend was last told of (epoch 0:
	// none, or this server stopped leading since).
	appendEpoch  gpaxos.Epoch
	appendCommit gpaxos.Zxid
	appendLast   gpaxos.Zxid
}

type leaderKey struct {
	epoch  gpaxos.Epoch
	leader gpaxos.ID
}

// roleKey is what the host logs when it changes: whom the node follows
// and what it leads, the way ZooKeeper logs LEADING and FOLLOWING.
type roleKey struct {
	promised, current   gpaxos.Epoch
	leader, coordinator gpaxos.ID
	groupEpoch          uint64
	leads, coordinates  bool
}

// logRole logs the node's role and the epochs it follows when they change.
func (h *Host) logRole() {
	st := h.node.Status()
	hs := st.HardState
	k := roleKey{promised: hs.Promised, current: hs.Current, leader: hs.Leader, coordinator: hs.Coordinator,
		groupEpoch: hs.GroupEpoch, leads: st.Leader, coordinates: st.Coordinator}
	if k == h.roleSeen {
		return
	}
	h.roleSeen = k
	role := "member"
	switch {
	case st.Leader:
		role = "leader"
	case st.Coordinator:
		role = "coordinator"
	}
	h.logger.Info("protocol role", "id", h.id, "role", role, "leader", hs.Leader, "promised", hs.Promised,
		"current", hs.Current, "group", st.Group, "coordinator", hs.Coordinator, "group_epoch", hs.GroupEpoch)
}

// NewHost builds a host whose node restarts from what storage held (the
// hard state, the newest snapshot, the entries after it). The host
// delivers snap, if any, first (Deliver is called before NewHost returns).
func NewHost(cfg HostConfig, hs gpaxos.HardState, snap *gpaxos.Snapshot, ents []gpaxos.Entry) (*Host, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	// A host that answers proposals once ordered has the leader order them
	// during its fsync too, so that the answers do not wait for it.
	cfg.Node.OrderDuringPersist = cfg.OnLeaderAppend != nil
	node, err := gpaxos.RestartNode(cfg.Node, hs, snap, ents)
	if err != nil {
		return nil, err
	}
	h := &Host{cfg: cfg, id: cfg.Node.ID, inc: cfg.Node.Incarnation, node: node, logger: cfg.Logger,
		stream: cfg.Boots << 32, recovering: cfg.Node.Recovering}
	h.streams.resendEvery = h.resendBase()
	if cfg.OnConfig != nil {
		for _, e := range ents {
			if e.Type == gpaxos.EntryConfChange {
				if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
					cfg.OnConfig(v, ctx)
				}
			}
		}
	}
	if snap != nil {
		cfg.Deliver(Delivery{Snapshot: snap})
	}
	return h, nil
}

// Propose hands body to be ordered (see Replica.Propose). Safe for
// concurrent use; the proposal enters the protocol at the next TakeQueued.
func (h *Host) Propose(body []byte, onAssign func(stream, seq uint64)) {
	h.seqMu.Lock()
	defer h.seqMu.Unlock()
	h.seq++
	if onAssign != nil {
		onAssign(h.stream, h.seq)
	}
	data := proposalHeader{Origin: h.id, Inc: h.inc, Stream: h.stream, Seq: h.seq}.append(make([]byte, 0, headerLen+len(body)))
	h.queue = append(h.queue, append(data, body...))
}

// Status returns the node's status, Recovering until the host has
// recorded its registration (RepairedAt): the node stops recovering as
// soon as it learns the registration committed, one write before that.
func (h *Host) Status() gpaxos.Status {
	st := h.node.Status()
	st.Recovering = st.Recovering || h.recovering
	return st
}

// RepairedAt is the commit point at which the ensemble registered this
// host's incarnation when it started in recovery (Node.Recovering); 0
// until then, and for a host that did not.
func (h *Host) RepairedAt() gpaxos.Zxid { return h.repairedAt }

// Resent counts the proposals this host sent the leader again because none
// of them committed for a resend interval.
func (h *Host) Resent() uint64 { return h.streams.resent }

// Incarnation is the host's incarnation.
func (h *Host) Incarnation() uint64 { return h.inc }

// Compact lets the node discard its log up to index (see gpaxos.Compact).
func (h *Host) Compact(index gpaxos.Zxid, data []byte) error { return h.node.Compact(index, data) }

// ProposeConfChange: see Replica.ProposeConfChange.
func (h *Host) ProposeConfChange(cc gpaxos.ConfChange, context []byte) error {
	return h.node.ProposeConfChange(cc, context)
}

// Voters returns the configuration the node uses now: the newest in its
// log, committed or not.
func (h *Host) Voters() quorum.Config { return h.node.Voters() }

// QueuedVoters: see gpaxos.Node.QueuedVoters.
func (h *Host) QueuedVoters() (quorum.Config, bool) { return h.node.QueuedVoters() }

// ConfigAt returns the configuration in effect at z.
func (h *Host) ConfigAt(z gpaxos.Zxid) quorum.Config { return h.node.ConfigAt(z) }

// Step feeds one received message to the node. At the leader, forwarded
// proposals pass the sequencer first.
//
// A leader appends only the proposals sent to its own epoch. The origin
// resends what it has not seen committed once an entry of a newer epoch
// than any it sent under commits (streams.go), which is safe only if its
// proposals sent under an older epoch can never commit after that: a
// proposal that reached the next leader late, or the same server leading
// again, would commit twice.
func (h *Host) Step(m gpaxos.Message) {
	if m.Type == gpaxos.MsgEarlyReply {
		h.receiveEarly(m)
		return
	}
	if m.Type == gpaxos.MsgProp {
		st := h.node.Status()
		if !st.Leader || m.Epoch != st.HardState.Promised {
			return
		}
		if h.seqr.next == nil || h.seqr.epoch != st.HardState.Promised {
			h.seqr.reset(st.HardState.Promised)
		}
		kept := m.Entries[:0:0]
		for _, e := range m.Entries {
			hd, body, err := parseHeader(e.Data)
			if err == nil && hd.Origin == m.From && hd.Inc == m.Inc && h.seqr.admit(hd) {
				kept = append(kept, e)
				h.leaderReceived(hd.Origin, body)
			}
		}
		if len(kept) == 0 {
			return
		}
		m.Entries = kept
	}
	h.node.Step(m)
	h.watchLeader()
}

// leaderReceived tells OnLeaderReceived of an admitted proposal.
func (h *Host) leaderReceived(origin gpaxos.ID, body []byte) {
	if h.cfg.OnLeaderReceived != nil {
		h.cfg.OnLeaderReceived(origin, body)
	}
}

// Tick advances the node's clock by one tick and looks after the
// proposals in flight.
func (h *Host) Tick() {
	h.node.Tick()
	h.watchLeader()
	h.logRole()
	h.tickStreams()
}

// NextReady returns the node's next Ready, after stepping the messages the
// node sent itself; false when there is nothing to do. It delivers the
// Ready's snapshot and committed entries itself, before they are durable
// here (see gpaxos.Ready.CommittedEntries). The driver sends rd.Early at
// once; unless rd is Overlapped, it then makes the rest durable (see
// gpaxos.Ready) and calls Persisted. A driver that persists off its loop
// may call NextReady again before Persisted: it gets overlapped Readies
// (Early messages and deliveries only) until then.
func (h *Host) NextReady() (gpaxos.Ready, bool) {
	for {
		if h.node.HasReady() {
			rd := h.node.Ready()
			h.leaderAppended(&rd)
			h.deliverReady(rd)
			return rd, true
		}
		if len(h.local) == 0 {
			// News of the streams made since the last Ready (a leader
			// change settled, early replies arrived) leave now rather
			// than with the next Ready, which may be a while coming.
			h.deliverNews()
			return gpaxos.Ready{}, false
		}
		local := h.local
		h.local = nil
		for _, m := range local {
			h.Step(m)
		}
	}
}

// deliverReady delivers rd's snapshot and committed entries, with the
// streams' news.
func (h *Host) deliverReady(rd gpaxos.Ready) {
	if rd.Snapshot != nil && len(h.streams.inflight) > 0 {
		h.abandon("a snapshot was installed while proposals were in flight")
	}
	d := Delivery{Snapshot: rd.Snapshot}
	for _, e := range rd.CommittedEntries {
		d.Entries = append(d.Entries, h.committed(e))
	}
	h.takeNews(&d)
	if d.Snapshot != nil || len(d.Entries) > 0 || len(d.Resent) > 0 || len(d.Early) > 0 || d.Abandoned != 0 {
		h.cfg.Deliver(d)
	}
}

// deliverNews delivers the streams' news, if any.
func (h *Host) deliverNews() {
	var d Delivery
	h.takeNews(&d)
	if len(d.Resent) > 0 || len(d.Early) > 0 || d.Abandoned != 0 {
		h.cfg.Deliver(d)
	}
}

// Persisted finishes rd, which NextReady returned (not an overlapped
// one), once its state is durable: it sends rd.Messages and advances the
// node.
func (h *Host) Persisted(rd gpaxos.Ready) error {
	if h.cfg.OnConfig != nil {
		for _, e := range rd.Entries {
			if e.Type == gpaxos.EntryConfChange {
				if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
					h.cfg.OnConfig(v, ctx)
				}
			}
		}
	}
	for _, m := range rd.Messages {
		if m.To == h.id {
			h.local = append(h.local, m)
		} else {
			h.cfg.Send(m)
		}
	}
	h.node.Advance()
	if st := h.node.Status(); h.recovering && !st.Recovering {
		h.recovering = false
		// Registering commits after everything committed before this
		// server asked, so its commit point bounds what was lost.
		h.repairedAt = st.HardState.Commit
		if h.cfg.OnRecovered != nil {
			if err := h.cfg.OnRecovered(); err != nil {
				return err
			}
		}
		h.logger.Info("replica registered again: it votes from now on", "id", h.id,
			"incarnation", fmt.Sprintf("%016x", h.inc))
	}
	h.deliverNews()
	return nil
}

// committed converts one committed entry and retires this server's own
// proposal it completes.
func (h *Host) committed(e gpaxos.Entry) Committed {
	c := Committed{Zxid: e.Zxid, Noop: e.Type != gpaxos.EntryNormal}
	if e.Type == gpaxos.EntryConfChange {
		if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
			c.Conf = &ConfCommitted{Voters: v, Context: ctx}
		}
	}
	if c.Noop {
		h.ownCommitted(e.Zxid, proposalHeader{}, false)
		return c
	}
	hd, body, err := parseHeader(e.Data)
	if err != nil {
		c.Noop = true
		h.ownCommitted(e.Zxid, proposalHeader{}, false)
		return c
	}
	c.Origin, c.Stream, c.Seq, c.Body = hd.Origin, hd.Stream, hd.Seq, body
	c.Own = hd.Origin == h.id && hd.Inc == h.inc
	h.ownCommitted(e.Zxid, hd, c.Own)
	return c
}
