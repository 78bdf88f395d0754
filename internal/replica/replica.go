package replica

import (
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ErrStopped is returned by calls on a stopped replica.
var ErrStopped = errors.New("replica: stopped")

// Committed is one committed entry, as the application sees it.
type Committed struct {
	Zxid gpaxos.Zxid
	// Noop marks a leader's no-op: it takes a zxid and changes nothing.
	Noop bool
	// Origin, Stream and Seq identify the proposal (see Propose); Own
	// says that this server's present incarnation proposed it (another
	// incarnation's streams may reuse the numbers).
	Origin      gpaxos.ID
	Stream, Seq uint64
	Own         bool
	// Body is what the origin passed to Propose.
	Body []byte
	// Conf, on a configuration entry, is the configuration it set and the
	// proposer's context; Noop is then true too (it carries no Body).
	Conf *ConfCommitted
}

// ConfCommitted is a committed configuration change.
type ConfCommitted struct {
	Voters  quorum.Config
	Context []byte
}

// Delivery is the next step the application must take, in order.
type Delivery struct {
	// Snapshot, when non-nil, replaces the application's state; it comes
	// before Entries.
	Snapshot *gpaxos.Snapshot
	// Entries are committed; apply them in order.
	Entries []Committed
	// Resent, after Entries, lists this server's proposals that moved to a
	// new stream, in order (streams.go): the application files them under
	// their new numbers, which their Committed entries will carry.
	Resent []Resend
	// Abandoned, when non-zero, is this server's new stream: proposals it
	// made on older streams will not be answered in order (a snapshot
	// installed while they were in flight, or a leader change that did not
	// settle in time). The application fails the requests waiting for
	// them; those proposals may still commit later, and are then applied
	// like anyone else's.
	Abandoned uint64
}

// Replica runs one server's Group Paxos node. Create it with Open, then
// Start it; all methods are safe for concurrent use.
type Replica struct {
	cfg  Config
	node *gpaxos.Node
	st   *storage
	init *gpaxos.Snapshot

	compactC chan compactReq
	confC    chan confReq
	votersC  chan votersReq
	deliverC chan Delivery
	stopC    chan struct{}
	doneC    chan struct{}
	stopOnce sync.Once
	err      atomic.Pointer[error]
	status   atomic.Pointer[Status]
	snapMu   sync.Mutex // serializes snapshot saves to the directory

	// seqMu guards the current stream and the last sequence number handed
	// out; Propose assigns them in the caller's goroutine so that the
	// application knows them before the proposal leaves.
	seqMu  sync.Mutex
	stream uint64
	seq    uint64
	queue  [][]byte      // proposed, not yet taken by the run loop
	queued chan struct{} // signals a non-empty queue

	// Owned by the run loop.
	streams    streams
	seqr       sequencer
	leaderSeen leaderKey
	local      []gpaxos.Message

	// Deliveries waiting for the application (see deliver).
	outMu   sync.Mutex
	out     []Delivery
	outWake chan struct{}
}

type leaderKey struct {
	epoch  gpaxos.Epoch
	leader gpaxos.ID
}

type confReq struct {
	cc      gpaxos.ConfChange
	context []byte
	done    chan error
}

type votersReq struct {
	index gpaxos.Zxid
	reply chan quorum.Config
}

type compactReq struct {
	index gpaxos.Zxid
	data  []byte
	done  chan error
}

// Open recovers the replica's storage in cfg.Dir and builds its node. The
// first Delivery after Start carries the recovered snapshot, if any.
func Open(cfg Config) (*Replica, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	st, rec, err := openStorage(cfg.Dir, cfg.NoSync, cfg.Logger, cfg.Voters, cfg.ID)
	if err != nil {
		return nil, err
	}
	st.onSync = cfg.OnSync
	rng := rand.New(rand.NewSource(cfg.Seed))
	node, err := gpaxos.RestartNode(gpaxos.Config{
		ID: cfg.ID, Voters: cfg.Voters, Topology: cfg.Topology,
		HeartbeatTicks: cfg.HeartbeatTicks, ElectionTicks: cfg.ElectionTicks,
		MaxBatch: cfg.MaxBatch, Rand: rng.Intn, Joining: cfg.Joining,
		Incarnation: st.id.Incarnation, Recovering: st.id.Recovering,
	}, rec.hs, rec.snap, rec.entries)
	if err != nil {
		st.close()
		return nil, err
	}
	r := &Replica{
		cfg: cfg, node: node, st: st, init: rec.snap,
		queued:   make(chan struct{}, 1),
		outWake:  make(chan struct{}, 1),
		compactC: make(chan compactReq),
		confC:    make(chan confReq),
		votersC:  make(chan votersReq),
		deliverC: make(chan Delivery),
		stopC:    make(chan struct{}),
		doneC:    make(chan struct{}),
		// Streams only grow across restarts too: the leader admits a
		// stream newer than the one it knows of this incarnation, and the
		// count of starts, durable before anything is proposed, makes
		// every start's streams larger than the last's.
		stream: st.id.Boots << 32,
	}
	r.streams.resendEvery = r.resendBase()
	if cfg.OnConfig != nil {
		for _, e := range rec.entries {
			if e.Type == gpaxos.EntryConfChange {
				if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
					cfg.OnConfig(v, ctx)
				}
			}
		}
	}
	cfg.Logger.Info("replica recovered", "id", cfg.ID, "incarnation", fmt.Sprintf("%016x", st.id.Incarnation),
		"recovering", st.id.Recovering, "promised", rec.hs.Promised, "current", rec.hs.Current,
		"entries", len(rec.entries), "snapshot", rec.snap != nil)
	r.publishStatus()
	return r, nil
}

// Start runs the replica until Stop.
func (r *Replica) Start() {
	go r.forward()
	go r.run()
}

// Deliveries returns the channel of committed state, in order. The
// application must keep reading it: the replica waits for room.
func (r *Replica) Deliveries() <-chan Delivery { return r.deliverC }

// Done is closed when the replica has stopped; Err then says why, if it
// failed.
func (r *Replica) Done() <-chan struct{} { return r.doneC }

// Err returns the error that stopped the replica, or nil.
func (r *Replica) Err() error {
	if p := r.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Stop stops the run loop and closes the storage.
func (r *Replica) Stop() {
	r.stopOnce.Do(func() { close(r.stopC) })
	<-r.doneC
}

// Propose hands body to be ordered. onAssign, when not nil, is called with
// the stream and sequence number the proposal's Committed will carry,
// before the proposal can commit, so the application can file it first.
// Proposals enter the protocol in the order of Propose calls. Propose never
// waits for the protocol; success means only that the proposal was queued.
func (r *Replica) Propose(body []byte, onAssign func(stream, seq uint64)) error {
	r.seqMu.Lock()
	defer r.seqMu.Unlock()
	select {
	case <-r.stopC:
		return ErrStopped
	default:
	}
	r.seq++
	if onAssign != nil {
		onAssign(r.stream, r.seq)
	}
	data := proposalHeader{Origin: r.cfg.ID, Inc: r.st.id.Incarnation, Stream: r.stream, Seq: r.seq}.append(make([]byte, 0, headerLen+len(body)))
	r.queue = append(r.queue, append(data, body...))
	select {
	case r.queued <- struct{}{}:
	default:
	}
	return nil
}

// ProposeConfChange asks this server's node, which must be the global
// leader, to order a configuration change carrying context (see
// gpaxos.ProposeConfChange for when it refuses). Success means the change
// is queued; it takes effect on each server as it is appended, and its
// commit arrives as a Committed with Conf set.
func (r *Replica) ProposeConfChange(cc gpaxos.ConfChange, context []byte) error {
	req := confReq{cc: cc, context: context, done: make(chan error, 1)}
	select {
	case r.confC <- req:
	case <-r.doneC:
		return ErrStopped
	}
	return <-req.done
}

// SaveSnapshot stores data, the application's state after applying every
// entry up to index, and lets the node discard its log up to there.
func (r *Replica) SaveSnapshot(index gpaxos.Zxid, data []byte) error {
	// The snapshot records the configuration in effect at its index,
	// which only the run loop's node knows.
	vr := votersReq{index: index, reply: make(chan quorum.Config, 1)}
	select {
	case r.votersC <- vr:
	case <-r.doneC:
		return ErrStopped
	}
	voters := <-vr.reply
	r.snapMu.Lock()
	err := r.st.saveSnapshot(index, voters, data, r.cfg.SnapRetain)
	r.snapMu.Unlock()
	if err != nil {
		return err
	}
	req := compactReq{index: index, data: data, done: make(chan error, 1)}
	select {
	case r.compactC <- req:
	case <-r.doneC:
		return ErrStopped
	}
	return <-req.done
}

// StallFsync makes the next count fsyncs of the log each take d longer,
// as a disk that stops answering for a while does (fault injection for
// tests: server's /faults "stall-fsync").
func (r *Replica) StallFsync(d time.Duration, count int) {
	r.st.stall.mu.Lock()
	r.st.stall.d, r.st.stall.count = d, count
	r.st.stall.mu.Unlock()
}

func (r *Replica) fail(err error) {
	r.err.CompareAndSwap(nil, &err)
	r.cfg.Logger.Error("replica stopped", "err", err)
}

func (r *Replica) run() {
	defer close(r.doneC)
	defer r.st.close()
	ticker := time.NewTicker(r.cfg.Tick)
	defer ticker.Stop()
	recv := r.cfg.Transport.Recv()
	if r.init != nil && !r.deliver(Delivery{Snapshot: r.init}) {
		return
	}
	for {
		select {
		case <-r.stopC:
			return
		case m := <-recv:
			r.step(m)
		case <-ticker.C:
			r.tick()
		case <-r.queued:
			r.takeQueued()
		case c := <-r.compactC:
			c.done <- r.node.Compact(c.index, c.data)
		case c := <-r.confC:
			c.done <- r.node.ProposeConfChange(c.cc, c.context)
		case v := <-r.votersC:
			v.reply <- r.node.ConfigAt(v.index)
		}
		// Take what else is already there, so that one Ready (one fsync)
		// covers it all.
	drain:
		for i := 0; i < 4096; i++ {
			select {
			case m := <-recv:
				r.step(m)
			case <-r.queued:
				r.takeQueued()
			default:
				break drain
			}
		}
		if err := r.handleReady(); err != nil {
			r.fail(err)
			return
		}
	}
}

// step feeds one message to the node. At the leader, forwarded proposals
// pass the sequencer first.
func (r *Replica) step(m gpaxos.Message) {
	if m.Type == gpaxos.MsgProp {
		st := r.node.Status()
		if !st.Leader {
			return
		}
		if r.seqr.next == nil || r.seqr.epoch != st.HardState.Promised {
			r.seqr.reset(st.HardState.Promised)
		}
		kept := m.Entries[:0:0]
		for _, e := range m.Entries {
			h, _, err := parseHeader(e.Data)
			if err == nil && h.Origin == m.From && h.Inc == m.Inc && r.seqr.admit(h) {
				kept = append(kept, e)
			}
		}
		if len(kept) == 0 {
			return
		}
		m.Entries = kept
	}
	r.node.Step(m)
	r.watchLeader()
}

func (r *Replica) tick() {
	r.node.Tick()
	r.watchLeader()
	r.tickStreams()
}

// handleReady persists, sends and delivers until the node is quiet.
func (r *Replica) handleReady() error {
	for {
		if !r.node.HasReady() && len(r.local) == 0 && r.streams.pendingAbandon == 0 {
			return nil
		}
		if !r.node.HasReady() {
			local := r.local
			r.local = nil
			for _, m := range local {
				r.step(m)
			}
			if r.streams.pendingAbandon != 0 && !r.node.HasReady() {
				d := Delivery{Abandoned: r.streams.pendingAbandon}
				r.streams.pendingAbandon = 0
				if !r.deliver(d) {
					return nil
				}
			}
			continue
		}
		rd := r.node.Ready()
		// Appends down the trees leave while this server's fsync runs
		// (gpaxos.Ready.Early says which may).
		for _, m := range rd.Early {
			r.cfg.Transport.Send(m)
		}
		if err := r.st.persist(&rd); err != nil {
			return err
		}
		if r.cfg.OnConfig != nil {
			for _, e := range rd.Entries {
				if e.Type == gpaxos.EntryConfChange {
					if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
						r.cfg.OnConfig(v, ctx)
					}
				}
			}
		}
		for _, m := range rd.Messages {
			if m.To == r.cfg.ID {
				r.local = append(r.local, m)
			} else {
				r.cfg.Transport.Send(m)
			}
		}
		if rd.Snapshot != nil && len(r.streams.inflight) > 0 {
			r.abandon("a snapshot was installed while proposals were in flight")
		}
		d := Delivery{Snapshot: rd.Snapshot}
		for _, e := range rd.CommittedEntries {
			d.Entries = append(d.Entries, r.committed(e))
		}
		d.Resent, r.streams.pendingResent = r.streams.pendingResent, nil
		d.Abandoned, r.streams.pendingAbandon = r.streams.pendingAbandon, 0
		r.node.Advance()
		r.publishStatus()
		if err := r.maybeRecovered(); err != nil {
			return err
		}
		if d.Snapshot != nil || len(d.Entries) > 0 || len(d.Resent) > 0 || d.Abandoned != 0 {
			if !r.deliver(d) {
				return nil
			}
		}
	}
}

// maybeRecovered clears the identity's recovering mark once the node votes
// again: its configuration registers this incarnation, so a restart needs
// no mark to know it.
func (r *Replica) maybeRecovered() error {
	if !r.st.id.Recovering || r.Status().Recovering {
		return nil
	}
	id := r.st.id
	id.Recovering = false
	if err := writeIdentity(r.st.idPath(), id); err != nil {
		return err
	}
	r.st.id = id
	r.cfg.Logger.Info("replica registered again: it votes from now on", "id", r.cfg.ID,
		"incarnation", fmt.Sprintf("%016x", id.Incarnation))
	return nil
}

// committed converts one committed entry and retires this server's own
// proposal it completes.
func (r *Replica) committed(e gpaxos.Entry) Committed {
	c := Committed{Zxid: e.Zxid, Noop: e.Type != gpaxos.EntryNormal}
	if e.Type == gpaxos.EntryConfChange {
		if v, ctx, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
			c.Conf = &ConfCommitted{Voters: v, Context: ctx}
		}
	}
	if c.Noop {
		r.ownCommitted(e.Zxid, proposalHeader{}, false)
		return c
	}
	h, body, err := parseHeader(e.Data)
	if err != nil {
		c.Noop = true
		r.ownCommitted(e.Zxid, proposalHeader{}, false)
		return c
	}
	c.Origin, c.Stream, c.Seq, c.Body = h.Origin, h.Stream, h.Seq, body
	c.Own = h.Origin == r.cfg.ID && h.Inc == r.st.id.Incarnation
	r.ownCommitted(e.Zxid, h, c.Own)
	return c
}

// deliver hands d to the forwarder without waiting: the protocol must keep
// running (heartbeats, acknowledgments) while the application is busy, for
// instance serializing a snapshot, or the ensemble would suspect this
// server. The backlog is bounded by how far the application lags.
func (r *Replica) deliver(d Delivery) bool {
	r.outMu.Lock()
	r.out = append(r.out, d)
	r.outMu.Unlock()
	select {
	case r.outWake <- struct{}{}:
	default:
	}
	select {
	case <-r.stopC:
		return false
	default:
		return true
	}
}

// forward moves deliveries, in order, to the application's channel.
func (r *Replica) forward() {
	for {
		r.outMu.Lock()
		batch := r.out
		r.out = nil
		r.outMu.Unlock()
		for _, d := range batch {
			select {
			case r.deliverC <- d:
			case <-r.stopC:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-r.outWake:
		case <-r.stopC:
			return
		}
	}
}
