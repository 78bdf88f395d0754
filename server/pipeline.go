package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/internal/watch"
)

// proposal is one item in the write pipeline. Items leave the pipeline in
// the order they entered it, which is what gives each connection FIFO order
// and makes a sync answer after every write submitted before it.
type proposal struct {
	// entry is the write to order, log and apply; nil for an item that
	// only needs its place in the order (a read deferred behind writes of
	// the same connection, or a sync).
	entry *txn.Entry
	// applied runs in the applier, with the tree locked exclusively, right
	// after entry is applied (or, for an item without entry, when its turn
	// comes). It queues the reply.
	applied func(res txn.Result, e *txn.Entry)
	// conn is the connection waiting for the item, if any; in an ensemble
	// it is closed when the item's outcome can no longer be known (see
	// replicated.abandon).
	conn *conn
	// sync marks a client's sync: in an ensemble it goes through the log
	// (a marker entry), so that the reply follows every write committed
	// before it, wherever it was proposed.
	sync bool
	// move, in an ensemble, is a session reconnecting here from another
	// server: the item orders the session's move to this server (owners.go).
	move     int64
	moveFrom gpaxos.ID // the owner the move takes the session from
	// expiry, in an ensemble, marks entry as the leader's expiry of a
	// session, decided when the leader had applied up to zxid decidedAt:
	// it takes effect only if it commits in the same epoch and after no
	// move of the session the leader had not applied (Owners.ExpiryCounts).
	expiry    bool
	decidedAt uint64
	// abandoned runs, instead of applied, when an ensemble gives up on the
	// item (a leader change); internal proposals use it to undo their
	// bookkeeping.
	abandoned func()
	// early, on a weak write (weak.go), answers it before it is applied,
	// from the result it will have once applied at zxid; it runs at most
	// once, before applied, which then only checks that result.
	early func(res txn.Result, zxid int64)
	// earlyResult is the encoded result early answered with. The server
	// that answers early sets it, before applied runs, in the goroutine
	// that then hands the item to the applier.
	earlyResult []byte
	// answered and held are the connection's reply order's (replyOrder):
	// the item's reply was sent; an early reply waiting for earlier ones.
	answered bool
	held     func()
}

// orderer is the server's total order of writes: the standalone pipeline,
// or Group Paxos in an ensemble (replicated). Items submitted by one
// goroutine complete in submission order.
type orderer interface {
	start()
	stop()
	// submit enters pr; false once the server is stopping.
	submit(pr *proposal) bool
	// lastZxid returns the last applied zxid: the tree's, when the caller
	// holds the tree lock, a recent one otherwise.
	lastZxid() int64
	// queued returns how many items wait to be ordered.
	queued() int
}

// maxBatch bounds how many proposals share one fsync, so one batch never
// holds the tree lock for long.
const maxBatch = 1024

// pipeline orders writes: the logger assigns zxids and times, appends to the
// log and fsyncs once per batch; the applier applies each batch in order.
// With weak writes answered early, the logger hands its batches to a
// syncer instead, and orders (and answers) the next ones while it fsyncs:
// a weak write does not wait for the fsync of the writes before it. In
// the dynamicfsync mode the syncer leaves batches of weak writes alone
// unsynced, and everything is answered once applied (weak.go).
type pipeline struct {
	s       *Server
	wal     *wal.Log
	in      chan *proposal
	toSync  chan syncBatch // logger → syncer; nil without a syncer
	toApply chan []*proposal
	stopped chan struct{}
	stopOne sync.Once
	wg      sync.WaitGroup

	zxid int64 // last zxid assigned; owned by the logger goroutine
	// applied is the last zxid applied, written by the applier under the
	// tree lock: readers holding the tree lock see the zxid of the tree
	// they read, others (a ping's reply) a recent one.
	applied atomic.Int64
	// snapDue says when to snapshot (applier only); s.snaps takes it.
	snapDue snapCounter
	// spec, in the shortcircuit mode with a weak namespace declared, is the
	// speculative state weak writes are answered from (weak.go); owned by
	// the logger goroutine.
	spec *spec
	// skipWeakSync, in the dynamicfsync mode, leaves batches holding only
	// weak writes unsynced (weak.go).
	skipWeakSync bool
	// stall delays the next fsyncs (fault injection: faults.go).
	stall fsyncStall
}

// fsyncStall delays fsyncs, as a disk that stops answering for a while
// does: the next count fsyncs of the log each wait d first. It is set from
// another goroutine (the fault-injection endpoint).
type fsyncStall struct {
	mu    sync.Mutex
	d     time.Duration
	count int
}

// set makes the next count fsyncs wait d.
func (st *fsyncStall) set(d time.Duration, count int) {
	st.mu.Lock()
	st.d, st.count = d, count
	st.mu.Unlock()
}

// take returns how long the fsync about to run must wait.
func (st *fsyncStall) take() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.count == 0 {
		return 0
	}
	st.count--
	return st.d
}

func newPipeline(s *Server, lg *wal.Log, lastZxid int64) *pipeline {
	p := &pipeline{
		s:       s,
		wal:     lg,
		in:      make(chan *proposal, 4*maxBatch),
		toApply: make(chan []*proposal, 4),
		stopped: make(chan struct{}),
		zxid:    lastZxid,
		snapDue: newSnapCounter(s.cfg.SnapCount),
	}
	p.applied.Store(lastZxid)
	switch weakModeOf(&s.cfg) {
	case WeakShortCircuit:
		p.spec = newSpec(s.cfg.Namespaces, s.tree, nil, s.log)
		p.toSync = make(chan syncBatch, 64)
	case WeakDynamicFsync:
		p.skipWeakSync = true
		p.toSync = make(chan syncBatch, 64)
	}
	return p
}

// syncBatch is a batch the logger appended, with how many entries it
// wrote, on its way to the syncer.
type syncBatch struct {
	batch  []*proposal
	writes int
}

func (p *pipeline) start() {
	p.wg.Add(2)
	go p.logLoop()
	go p.applyLoop()
	if p.toSync != nil {
		p.wg.Add(1)
		go p.syncLoop()
	}
}

// stop ends every stage. Proposals not yet logged are dropped (their
// connections are already closed); logged ones are durable and are applied
// at the next start by recovery.
func (p *pipeline) stop() {
	p.stopOne.Do(func() { close(p.stopped) })
	p.wg.Wait()
	if err := p.wal.Close(); err != nil {
		p.s.log.Error("closing the log", "err", err)
	}
}

// submit enters pr into the pipeline; it returns false once the server is
// stopping.
func (p *pipeline) submit(pr *proposal) bool {
	select {
	case p.in <- pr:
		return true
	case <-p.stopped:
		return false
	}
}

func (p *pipeline) lastZxid() int64 { return p.applied.Load() }

func (p *pipeline) queued() int { return len(p.in) }

func (p *pipeline) logLoop() {
	defer p.wg.Done()
	if p.toSync != nil {
		defer close(p.toSync)
	} else {
		defer close(p.toApply)
	}
	var buf []byte
	// A log with namespaces declared carries in each record the
	// namespaces it changes (quarantine.go).
	tagged := p.s.cfg.Namespaces.Len() > 0
	for {
		var first *proposal
		select {
		case first = <-p.in:
		case <-p.stopped:
			return
		}
		batch := []*proposal{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case pr := <-p.in:
				batch = append(batch, pr)
			default:
				break drain
			}
		}
		now := time.Now().UnixMilli()
		writes := 0
		for _, pr := range batch {
			if pr.entry == nil {
				continue
			}
			p.zxid++
			pr.entry.Zxid = p.zxid
			pr.entry.Time = now
			buf = pr.entry.Marshal(buf[:0])
			mask := wal.MaskAll
			if tagged {
				mask = entryMask(p.s.cfg.Namespaces, pr.entry)
			}
			if err := p.wal.AppendTagged(p.zxid, mask, buf); err != nil {
				p.s.fail(err)
				return
			}
			writes++
		}
		if p.toSync != nil {
			if p.spec != nil && writes > 0 && !p.answerEarly(batch) {
				return
			}
			select {
			case p.toSync <- syncBatch{batch, writes}:
			case <-p.stopped:
				return
			}
			continue
		}
		if writes > 0 && !p.sync(writes) {
			return
		}
		select {
		case p.toApply <- batch:
		case <-p.stopped:
			return
		}
	}
}

// sync makes the writes appended so far durable; it returns false if the
// log failed (the server then stops).
func (p *pipeline) sync(writes int) bool {
	if d := p.stall.take(); d > 0 {
		time.Sleep(d)
	}
	start := time.Now()
	if err := p.wal.Sync(); err != nil {
		p.s.fail(err)
		return false
	}
	p.s.metrics.observeSync(writes, time.Since(start))
	return true
}

// weakOnly reports whether the entries of batches are all weak writes.
func (p *pipeline) weakOnly(batches []syncBatch) bool {
	for _, b := range batches {
		for _, pr := range b.batch {
			if pr.entry != nil && !weakOnly(p.s.cfg.Namespaces, pr.entry) {
				return false
			}
		}
	}
	return true
}

// syncLoop fsyncs what the logger appended, once for every batch waiting
// (in the dynamicfsync mode, not when they hold only weak writes), and
// hands the batches on to the applier in order.
func (p *pipeline) syncLoop() {
	defer p.wg.Done()
	defer close(p.toApply)
	for first := range p.toSync {
		batches := []syncBatch{first}
	drain:
		for {
			select {
			case b, ok := <-p.toSync:
				if !ok {
					break drain
				}
				batches = append(batches, b)
			default:
				break drain
			}
		}
		writes := 0
		for _, b := range batches {
			writes += b.writes
		}
		switch {
		case writes == 0:
		case p.skipWeakSync && p.weakOnly(batches):
			if err := p.wal.Flush(); err != nil {
				p.s.fail(err)
				return
			}
		case !p.sync(writes):
			return
		}
		for _, b := range batches {
			select {
			case p.toApply <- b.batch:
			case <-p.stopped:
				return
			}
		}
	}
}

// answerEarly answers the weak writes of batch, just logged, from the
// speculative state, which every entry of the batch advances in order.
// The records are handed to the operating system first, so that a process
// crash loses nothing answered; a machine crash before the fsync can. It
// returns false if the log failed (the server then stops).
func (p *pipeline) answerEarly(batch []*proposal) bool {
	if err := p.wal.Flush(); err != nil {
		p.s.fail(err)
		return false
	}
	for _, pr := range batch {
		if pr.entry == nil {
			continue
		}
		if res, answer := p.spec.entry(pr.entry, 0); answer && pr.early != nil {
			pr.early(res, pr.entry.Zxid)
		}
	}
	return true
}

func (p *pipeline) applyLoop() {
	defer p.wg.Done()
	s := p.s
	var deliveries []watch.Delivery
	for batch := range p.toApply {
		s.treeMu.Lock()
		for _, pr := range batch {
			var res txn.Result
			if pr.entry != nil {
				var trig = s.applyEntry(pr.entry, &res)
				deliveries = s.triggerWatches(trig, deliveries[:0])
				p.applied.Store(pr.entry.Zxid)
				p.snapDue.applied()
			}
			if pr.applied != nil {
				pr.applied(res, pr.entry)
			}
		}
		if p.snapDue.isDue() && s.snaps.idle() && s.snaps.take() {
			p.snapDue.taken()
		}
		s.treeMu.Unlock()
	}
}
