package server

import (
	"sync"
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
}

// orderer is the server's total order of writes: the standalone pipeline,
// or Group Paxos in an ensemble (replicated). Items submitted by one
// goroutine complete in submission order.
type orderer interface {
	start()
	stop()
	// submit enters pr; false once the server is stopping.
	submit(pr *proposal) bool
	// lastZxid returns the last applied zxid; the caller holds the tree lock.
	lastZxid() int64
	// queued returns how many items wait to be ordered.
	queued() int
}

// maxBatch bounds how many proposals share one fsync, so one batch never
// holds the tree lock for long.
const maxBatch = 1024

// pipeline orders writes: the logger assigns zxids and times, appends to the
// log and fsyncs once per batch; the applier applies each batch in order.
type pipeline struct {
	s       *Server
	wal     *wal.Log
	in      chan *proposal
	toApply chan []*proposal
	stopped chan struct{}
	stopOne sync.Once
	wg      sync.WaitGroup

	zxid int64 // last zxid assigned; owned by the logger goroutine
	// applied is the last zxid applied; written by the applier under the
	// tree lock, so readers holding the tree lock see a consistent value.
	applied int64
	// sinceSnap counts entries applied since the last snapshot (applier only).
	sinceSnap int
}

func newPipeline(s *Server, lg *wal.Log, lastZxid int64) *pipeline {
	return &pipeline{
		s:       s,
		wal:     lg,
		in:      make(chan *proposal, 4*maxBatch),
		toApply: make(chan []*proposal, 4),
		stopped: make(chan struct{}),
		zxid:    lastZxid,
		applied: lastZxid,
	}
}

func (p *pipeline) start() {
	p.wg.Add(2)
	go p.logLoop()
	go p.applyLoop()
}

// stop ends both stages. Proposals not yet logged are dropped (their
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

// lastZxid returns the last applied zxid; the caller holds the tree lock
// (shared or exclusive).
func (p *pipeline) lastZxid() int64 { return p.applied }

func (p *pipeline) queued() int { return len(p.in) }

func (p *pipeline) logLoop() {
	defer p.wg.Done()
	defer close(p.toApply)
	var buf []byte
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
			if err := p.wal.Append(p.zxid, buf); err != nil {
				p.s.fail(err)
				return
			}
			writes++
		}
		if writes > 0 {
			start := time.Now()
			if err := p.wal.Sync(); err != nil {
				p.s.fail(err)
				return
			}
			p.s.metrics.observeSync(writes, time.Since(start))
		}
		select {
		case p.toApply <- batch:
		case <-p.stopped:
			return
		}
	}
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
				p.applied = pr.entry.Zxid
				p.sinceSnap++
			}
			if pr.applied != nil {
				pr.applied(res, pr.entry)
			}
		}
		if p.sinceSnap >= s.cfg.SnapCount && s.snaps.idle() {
			p.sinceSnap = 0
			s.snaps.take()
		}
		s.treeMu.Unlock()
	}
}
