package replica

import (
	"errors"
	"fmt"
	"math/rand"
	"runtime"
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
	// Early, after Resent, are results a leader computed for this
	// server's proposals in flight once it had ordered them (early.go).
	// Each proposal is answered early at most once, and one answered
	// early is never resent: if it does not commit, its stream is
	// abandoned.
	Early []Early
	// Abandoned, when non-zero, is this server's new stream: proposals it
	// made on older streams will not be answered in order (a snapshot
	// installed while they were in flight, or a leader change that did not
	// settle in time). The application fails the requests waiting for
	// them; those proposals may still commit later, and are then applied
	// like anyone else's.
	Abandoned uint64
}

// Replica runs one server's Group Paxos node: a Host driven by one
// goroutine over a real clock, the files of its data directory and a
// network transport. Create it with Open, then Start it; all methods are
// safe for concurrent use.
type Replica struct {
	cfg  Config
	host *Host
	st   *storage

	compactC chan compactReq
	confC    chan confReq
	votersC  chan votersReq
	deliverC chan Delivery
	stopC    chan struct{}
	doneC    chan struct{}
	stopOnce sync.Once
	err      atomic.Pointer[error]
	status   atomic.Pointer[Status]

	queued chan struct{} // signals a proposal queued by Propose
	ticker *time.Ticker  // the node's clock; owned by the run loop

	// The storage goroutine (persistLoop) makes one Ready durable at a
	// time while the run loop goes on stepping messages: persistC hands
	// it the Ready, persistedC returns the outcome, and persisting is the
	// Ready in between (owned by the run loop).
	persistC   chan *gpaxos.Ready
	persistedC chan error
	persisting *gpaxos.Ready

	// Early replies to this server's own proposals (SendEarly).
	earlyMu    sync.Mutex
	earlyLocal []gpaxos.Message
	earlyWake  chan struct{}

	// Deliveries waiting for the application (see deliver).
	outMu   sync.Mutex
	out     []Delivery
	outWake chan struct{}
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
	st, rec, err := openStorage(cfg.Dir, cfg.NoSync, cfg.Logger, cfg.Voters, cfg.ID, cfg.LogWritten)
	if err != nil {
		return nil, err
	}
	st.onSync, st.skipSync = cfg.OnSync, cfg.SkipSync
	rng := rand.New(rand.NewSource(cfg.Seed))
	r := &Replica{
		cfg: cfg, st: st,
		queued:     make(chan struct{}, 1),
		earlyWake:  make(chan struct{}, 1),
		outWake:    make(chan struct{}, 1),
		compactC:   make(chan compactReq),
		confC:      make(chan confReq),
		votersC:    make(chan votersReq),
		deliverC:   make(chan Delivery),
		persistC:   make(chan *gpaxos.Ready, 1),
		persistedC: make(chan error, 1),
		stopC:      make(chan struct{}),
		doneC:      make(chan struct{}),
	}
	r.host, err = NewHost(HostConfig{
		Node: gpaxos.Config{
			ID: cfg.ID, Voters: cfg.Voters, Topology: cfg.Topology,
			HeartbeatTicks: cfg.HeartbeatTicks, ElectionTicks: cfg.ElectionTicks,
			MaxBatch: cfg.MaxBatch, Rand: rng.Intn, Joining: cfg.Joining,
			Incarnation: st.id.Incarnation, Recovering: st.id.Recovering,
		},
		Boots: st.id.Boots, Tick: cfg.Tick, ProposalTimeout: cfg.ProposalTimeout, SettleTimeout: cfg.SettleTimeout,
		Clock: wallClock{}, Send: cfg.Transport.Send, Deliver: func(d Delivery) { r.deliver(d) },
		OnConfig: cfg.OnConfig, OnRecovered: st.clearRecovering, OnLeaderReceived: cfg.OnLeaderReceived,
		OnLeaderAppend: cfg.OnLeaderAppend, AcceptEarly: cfg.AcceptEarly, Logger: cfg.Logger,
	}, rec.hs, rec.snap, rec.entries)
	if err != nil {
		st.close()
		return nil, err
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
	select {
	case <-r.stopC:
		return ErrStopped
	default:
	}
	r.host.Propose(body, onAssign)
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
	if err := r.st.saveSnapshot(index, voters, data, r.cfg.SnapRetain); err != nil {
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
	stored := make(chan struct{})
	go r.persistLoop(stored)
	defer func() {
		close(r.persistC)
		<-stored
		r.st.close()
	}()
	r.ticker = time.NewTicker(r.cfg.Tick)
	defer r.ticker.Stop()
	recv := r.cfg.Transport.Recv()
	h := r.host
	for {
		var err error
		select {
		case <-r.stopC:
			return
		case res := <-r.persistedC:
			err = r.persisted(res)
		case ms := <-recv:
			r.step(ms)
		case <-r.ticker.C:
			h.Tick()
		case <-r.queued:
			h.TakeQueued()
		case <-r.earlyWake:
			r.takeLocalEarly()
		case c := <-r.compactC:
			c.done <- h.Compact(c.index, c.data)
		case c := <-r.confC:
			c.done <- h.ProposeConfChange(c.cc, c.context)
		case v := <-r.votersC:
			v.reply <- h.ConfigAt(v.index)
		}
		if err == nil {
			err = r.takeWaiting()
		}
		if err == nil {
			err = r.pump()
		}
		if err != nil {
			r.fail(err)
			return
		}
		// The status follows the node as it steps, not as its disk
		// catches up: a leader deposed during a long fsync must stop
		// acting as leader (expiring sessions, say) when its node learns
		// it, not when the fsync returns.
		r.publishStatus()
	}
}

// persistLoop makes the Readies it is handed durable, in order, until
// persistC closes. It sends each Ready's Messages to other servers as
// soon as the fsync returns, rather than leave them to the loop when it
// next looks: on a member they are the acknowledgment the leader waits
// for. No message to the same server can overtake them: until Advance
// the node holds back every later message to a server this Ready
// writes to (gpaxos.Node.Ready).
func (r *Replica) persistLoop(stored chan<- struct{}) {
	defer close(stored)
	for rd := range r.persistC {
		err := r.st.persist(rd)
		if err == nil {
			for _, m := range rd.Messages {
				if m.To != r.cfg.ID {
					r.cfg.Transport.Send(m)
				}
			}
		}
		r.persistedC <- err
	}
}

// pump takes the host's Readies until it is quiet. Early messages leave
// at once and the host delivers what committed; a Ready's state goes to
// the storage goroutine, and until it is durable the host hands out only
// overlapped Readies while the loop goes on stepping messages: members'
// acknowledgments commit during this server's fsync, and commits reach
// the application during it (gpaxos.Node.Ready).
func (r *Replica) pump() error {
	for {
		rd, ok := r.host.NextReady()
		if !ok {
			return nil
		}
		for _, m := range rd.Early {
			r.cfg.Transport.Send(m)
		}
		if rd.Overlapped {
			continue
		}
		if !rd.MustWrite(r.st.saved) {
			if err := r.host.Persisted(rd); err != nil {
				return err
			}
			continue
		}
		if len(rd.Early) > 0 {
			// The transport's writers must get the early messages onto
			// the wire before the storage goroutine blocks in fsync.
			// Readied by Send, they would otherwise wait behind it for a
			// thread, or, with one P (GOMAXPROCS=1, as the launcher runs
			// large ensembles on small machines), for the runtime to
			// take the P back from the syscall: often until after the
			// fsync they were meant to overlap. Yielding runs them on
			// this thread first.
			runtime.Gosched()
		}
		r.persisting = &rd
		r.persistC <- &rd
	}
}

// persisted finishes the Ready the storage goroutine made durable (or
// failed to: err).
func (r *Replica) persisted(err error) error {
	rd := r.persisting
	r.persisting = nil
	if err != nil {
		return err
	}
	// persistLoop sent the messages to other servers; the host takes
	// those to this one.
	local := *rd
	local.Messages = nil
	for _, m := range rd.Messages {
		if m.To == r.cfg.ID {
			local.Messages = append(local.Messages, m)
		}
	}
	return r.host.Persisted(local)
}

// takeWaiting takes what is already waiting (messages, proposals,
// ticks, the application's requests, the storage's outcome), so that
// one Ready (one fsync) covers it all. Taking every kind keeps the
// node's clock and the application served while a steady load keeps the
// loop busy.
func (r *Replica) takeWaiting() error {
	recv := r.cfg.Transport.Recv()
	h := r.host
	for i := 0; i < 4096; i++ {
		select {
		case res := <-r.persistedC:
			if err := r.persisted(res); err != nil {
				return err
			}
		case ms := <-recv:
			r.step(ms)
		case <-r.queued:
			h.TakeQueued()
		case <-r.ticker.C:
			h.Tick()
		case <-r.earlyWake:
			r.takeLocalEarly()
		case c := <-r.compactC:
			c.done <- h.Compact(c.index, c.data)
		case c := <-r.confC:
			c.done <- h.ProposeConfChange(c.cc, c.context)
		case v := <-r.votersC:
			v.reply <- h.ConfigAt(v.index)
		default:
			return nil
		}
	}
	return nil
}

// step hands received messages to the node, in order.
func (r *Replica) step(ms []gpaxos.Message) {
	for _, m := range ms {
		r.host.Step(m)
	}
}

// wallClock is the Clock of a Replica.
type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }

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
