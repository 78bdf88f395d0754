package server

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/internal/watch"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// What a proposal's body carries in an ensemble (first byte).
const (
	bodyTxn byte = 1 // a txn.Entry; its zxid is the log position
	// bodyTouch lists the sessions with a live connection at the origin
	// (sessions.AppendTouch); bodyTouchFixed is its earlier encoding, 8
	// bytes per session, which logs written before may still hold.
	bodyTouch      byte = 7
	bodyTouchFixed byte = 2
	bodySync       byte = 3 // a client's sync: a place in the order, no change
	// bodyExpiry is a leader's expiry of a session: the epoch it was
	// decided at (sessions.AppendExpiry), then a txn.Entry.
	bodyExpiry byte = 5
)

// replicated is the orderer of an ensemble member: writes are proposed to
// Group Paxos (internal/replica) and every committed entry, whoever
// proposed it, is applied here in zxid order. The items this server
// submitted wait in pending, in submission order, and complete when their
// entry commits; an item without an entry (a read deferred behind writes
// of its connection) completes once everything before it has.
type replicated struct {
	s         *Server
	rep       *replica.Replica
	transport peerTransport
	in        chan *proposal

	stopped  chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup

	mu      sync.Mutex // guards pending; taken after the tree lock
	pending []*pendingItem

	// applied is written by the applier under the tree lock (lastZxid).
	applied atomic.Int64
	// Owned by the applier, under the tree lock.
	snapDue    snapCounter
	deliveries []watch.Delivery
	snapping   atomic.Bool
	// owners maps each session to the server its requests may come from
	// (sessions.Owners).
	owners *sessions.Owners
	// ends remembers where the epochs ended (weak_ensemble.go).
	ends epochEnds

	// weak answers weak writes early while this server leads; nil unless
	// it does so (weak_ensemble.go).
	weak *weakLeader
	// div compares the members' namespace digests (divergence.go); nil
	// without namespaces.
	div *divergence
}

type pendingItem struct {
	pr          *proposal
	ordered     bool // has an entry in the log (a write or a sync marker)
	stream, seq uint64
}

func newReplicated(s *Server, rep *replica.Replica) *replicated {
	r := &replicated{s: s, rep: rep, in: make(chan *proposal, 4*maxBatch), stopped: make(chan struct{}),
		owners: sessions.NewOwners(), snapDue: newSnapCounter(s.cfg.SnapCount)}
	if s.cfg.Namespaces.Len() > 0 {
		r.div = newDivergence(s.cfg.DigestInterval)
	}
	return r
}

func (r *replicated) start() {
	r.rep.Start()
	r.wg.Add(2)
	go r.proposeLoop()
	go r.applyLoop()
	if r.weak != nil {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.weak.run(r.stopped)
		}()
	}
}

func (r *replicated) stop() {
	r.stopOnce.Do(func() { close(r.stopped) })
	r.rep.Stop()
	r.wg.Wait()
	if r.transport != nil {
		r.transport.Close()
	}
}

func (r *replicated) submit(pr *proposal) bool {
	select {
	case r.in <- pr:
		return true
	case <-r.stopped:
		return false
	}
}

func (r *replicated) lastZxid() int64 { return r.applied.Load() }

func (r *replicated) queued() int { return len(r.in) }

// pendingSyncs counts this server's clients' syncs that wait for their
// place in the log to commit.
func (r *replicated) pendingSyncs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, it := range r.pending {
		if it.pr.sync {
			n++
		}
	}
	return n
}

// proposeLoop files every submitted item in pending and proposes the ones
// that need the log. One goroutine, so proposals leave in submission order.
func (r *replicated) proposeLoop() {
	defer r.wg.Done()
	var buf []byte
	for {
		var pr *proposal
		select {
		case pr = <-r.in:
		case <-r.stopped:
			return
		}
		if pr.entry == nil && !pr.sync && pr.move == 0 {
			r.s.treeMu.Lock()
			r.mu.Lock()
			r.pending = append(r.pending, &pendingItem{pr: pr})
			r.fireReady()
			r.mu.Unlock()
			r.s.treeMu.Unlock()
			continue
		}
		switch {
		case pr.sync:
			buf = append(buf[:0], bodySync)
		case pr.move != 0:
			buf = append(buf[:0], moveBody(pr.move, pr.moveFrom)...)
		case pr.expiry:
			pr.entry.Time = time.Now().UnixMilli()
			buf = pr.entry.Marshal(sessions.AppendExpiry(append(buf[:0], bodyExpiry), pr.decidedAt))
		default:
			pr.entry.Time = time.Now().UnixMilli()
			buf = pr.entry.Marshal(append(buf[:0], bodyTxn))
		}
		err := r.rep.Propose(buf, func(stream, seq uint64) {
			r.mu.Lock()
			r.pending = append(r.pending, &pendingItem{pr: pr, ordered: true, stream: stream, seq: seq})
			r.mu.Unlock()
		})
		if err != nil {
			return
		}
	}
}

// propose sends an internal proposal that nobody waits for.
func (r *replicated) propose(body []byte) { r.rep.Propose(body, nil) }

// fireReady completes the items at the head of pending that wait for
// nothing but their turn. r.mu and the tree lock are held.
func (r *replicated) fireReady() {
	for len(r.pending) > 0 && !r.pending[0].ordered {
		it := r.pending[0]
		r.pending = r.pending[1:]
		if it.pr.applied != nil {
			it.pr.applied(txn.Result{}, nil)
		}
	}
}

func (r *replicated) applyLoop() {
	defer r.wg.Done()
	for {
		var d replica.Delivery
		select {
		case d = <-r.rep.Deliveries():
		case <-r.rep.Done():
			if err := r.rep.Err(); err != nil {
				r.s.fail(err)
			}
			return
		case <-r.stopped:
			return
		}
		r.s.treeMu.Lock()
		if d.Snapshot != nil {
			r.restore(d.Snapshot)
		}
		for i := range d.Entries {
			r.apply(&d.Entries[i])
		}
		if len(d.Resent) > 0 {
			r.resent(d.Resent)
		}
		if len(d.Early) > 0 {
			r.early(d.Early)
		}
		if d.Abandoned != 0 {
			r.abandon(d.Abandoned)
		}
		r.s.noteDeclared()
		if r.snapDue.isDue() && !r.snapping.Load() {
			r.snapshot()
		}
		r.s.treeMu.Unlock()
	}
}

// apply applies one committed entry; the tree lock is held.
func (r *replicated) apply(c *replica.Committed) {
	s := r.s
	defer func() {
		r.applied.Store(int64(c.Zxid))
		r.ends.applied(int64(c.Zxid))
		r.afterApply(int64(c.Zxid))
	}()
	if c.Conf != nil {
		r.applyConf(c)
		return
	}
	if c.Noop || len(c.Body) == 0 {
		return
	}
	switch c.Body[0] {
	case bodyTxn:
		e, err := txn.Unmarshal(c.Body[1:])
		if err != nil {
			// Every replica refuses it alike, so they stay in step.
			s.log.Error("undecodable committed entry", "zxid", fmt.Sprintf("0x%x", uint64(c.Zxid)), "err", err)
			return
		}
		e.Zxid = int64(c.Zxid)
		r.applyCommitted(c, e)
	case bodyExpiry:
		e, counts := expiryEntry(r.owners, c.Body[1:], uint64(c.Zxid))
		if !counts {
			// Decided by a leader of another epoch, or before a move of
			// the session it had not applied: every replica ignores it
			// alike; the proposer may decide again.
			r.complete(c, txn.Result{Err: zkproto.ErrSessionExpired}, nil)
			return
		}
		r.applyCommitted(c, e)
	case bodyTouch, bodyTouchFixed:
		now := time.Now()
		s.touchListed(c.Body, now)
		s.contacts.touched(c.Origin, now)
		if c.Own {
			s.ownTouchCommitted(c.Stream, c.Seq)
		}
	case bodySync:
		r.complete(c, txn.Result{}, nil)
	case bodyMove:
		r.applyMove(c)
	case bodyDigest:
		r.applyDigestReport(c.Origin, c.Own, c.Body[1:])
	}
}

// applyCommitted applies a committed txn.Entry; the tree lock is held.
func (r *replicated) applyCommitted(c *replica.Committed, e *txn.Entry) {
	s := r.s
	res, trig, moved := stepTxn(s.tree, r.owners, e, c.Origin)
	if moved {
		r.refuseMoved(c, e)
		return
	}
	s.metrics.applied.Inc()
	r.deliveries = s.triggerWatches(trig, r.deliveries[:0])
	r.snapDue.applied()
	r.sessionBookkeeping(e, res, c.Origin)
	r.complete(c, res, e)
}

// sessionBookkeeping keeps every replica's session tracker in step with the
// sessions in the tree, so that whichever server leads can expire them.
func (r *replicated) sessionBookkeeping(e *txn.Entry, res txn.Result, origin gpaxos.ID) {
	s := r.s
	switch e.Op.Kind {
	case txn.KindCreateSession:
		if res.Err == 0 {
			s.sessions.Add(e.Session, time.Duration(e.Timeout)*time.Millisecond, time.Now())
		}
	case txn.KindCloseSession:
		s.sessions.Remove(e.Session)
		if origin != s.cfg.ServerID {
			if c := s.connOfSession(e.Session); c != nil {
				c.close("session closed by the ensemble")
			}
		}
	}
}

// complete answers this server's item for committed entry c.
func (r *replicated) complete(c *replica.Committed, res txn.Result, e *txn.Entry) {
	if !c.Own {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fireReady()
	if len(r.pending) == 0 {
		return
	}
	it := r.pending[0]
	if it.stream != c.Stream || it.seq != c.Seq {
		return // an internal proposal, or one of an abandoned stream
	}
	r.pending = r.pending[1:]
	if it.pr.applied != nil {
		it.pr.applied(res, e)
	}
	r.fireReady()
}

// resent files this server's items whose proposals moved to a new stream
// (a leader change settled: replica.Resend) under their new numbers; their
// requests are answered when those commit.
func (r *replicated) resent(moves []replica.Resend) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for _, it := range r.pending {
		if !it.ordered {
			continue
		}
		for i < len(moves) && (moves[i].OldStream != it.stream || moves[i].OldSeq != it.seq) {
			i++ // not waited for here (an internal proposal)
		}
		if i == len(moves) {
			return
		}
		it.stream, it.seq = moves[i].NewStream, moves[i].NewSeq
		i++
	}
}

// abandon fails the items of streams older than stream: their entries may
// or may not commit, so their connections are closed, as ZooKeeper closes
// client connections when the leader changes; clients reconnect and see
// CONNECTIONLOSS for requests in flight.
func (r *replicated) abandon(stream uint64) {
	r.mu.Lock()
	failed := map[*conn]bool{}
	keep := r.pending[:0]
	lost := 0
	for _, it := range r.pending {
		if it.ordered && it.stream < stream {
			if it.answeredEarly() {
				lost++
			}
			if it.pr.conn != nil {
				failed[it.pr.conn] = true
			}
			if it.pr.abandoned != nil {
				it.pr.abandoned()
			}
			continue
		}
		if it.pr.conn != nil && failed[it.pr.conn] {
			continue
		}
		keep = append(keep, it)
	}
	clear(r.pending[len(keep):])
	r.pending = keep
	r.fireReady()
	r.mu.Unlock()
	if lost > 0 {
		// Answered, and perhaps lost with the leader that ordered them:
		// their clients' next handshake finds out (lostZxid).
		r.s.metrics.weakLost.Add(float64(lost))
		r.s.log.Warn("weak writes answered early may have been lost with their leader", "count", lost)
	}
	for c := range failed {
		c.close("leader changed: outcome of in-flight requests unknown")
	}
}

// restore replaces the tree by a snapshot's; the tree lock is held.
func (r *replicated) restore(sn *gpaxos.Snapshot) {
	owners, treeData, err := sessions.SplitOwners(sn.Data)
	if err != nil {
		r.s.fail(fmt.Errorf("installing snapshot 0x%x: %w", uint64(sn.Index), err))
		return
	}
	t, err := datatree.ReadSnapshot(bytes.NewReader(treeData))
	if err != nil {
		r.s.fail(fmt.Errorf("installing snapshot 0x%x: %w", uint64(sn.Index), err))
		return
	}
	t.SetSnapshotSections(sectionNames(r.s.cfg.Namespaces))
	r.s.tree = t
	r.owners = owners
	r.applied.Store(int64(sn.Index))
	r.ends.restored(int64(sn.Index))
	r.adoptMembership(t.Config(), sn.Voters)
	r.s.checkMember(int64(sn.Index))
	r.s.sessions.ResetFrom(t.Sessions(), time.Now())
	r.s.log.Info("installed snapshot", "zxid", fmt.Sprintf("0x%x", uint64(sn.Index)), "nodes", t.NodeCount())
}

// snapshotBytesPerNode is about what a snapshot holds per node besides
// its path and data: a frame's length, stat and ACL index.
const snapshotBytesPerNode = 80

// snapshot fixes the tree's state at the applied entry (tree lock held)
// and, in the background, serializes it a chunk at a time under the read
// lock (datatree.SnapshotWriter) and stores it, letting the replica
// discard its log up to here.
func (r *replicated) snapshot() {
	w, err := r.s.tree.BeginSnapshot()
	if err != nil {
		return // a backup's snapshot is being written: again after the next entry
	}
	var buf bytes.Buffer
	// Sized once: growing by doubling leaves the collector copies of a big
	// tree's snapshot to sweep.
	buf.Grow(int(r.s.tree.ApproximateDataSize()) + snapshotBytesPerNode*r.s.tree.NodeCount())
	buf.Write(r.owners.AppendTo(nil))
	r.snapDue.taken()
	idx := gpaxos.Zxid(r.applied.Load())
	r.snapping.Store(true)
	// stop waits for it: a server that has stopped writes nothing more
	// into its directory, which a restart or a tool may take over at once.
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer r.snapping.Store(false)
		if err := r.s.writeSnapshot(w, &buf); err != nil {
			r.s.log.Error("serializing snapshot", "err", err)
			return
		}
		if err := r.rep.SaveSnapshot(idx, buf.Bytes()); errors.Is(err, replica.ErrStopped) {
			return
		} else if err != nil {
			r.s.log.Error("saving snapshot", "zxid", fmt.Sprintf("0x%x", uint64(idx)), "err", err)
			return
		}
		r.s.metrics.snapshots.Inc()
	}()
}

// touchBody encodes the sessions with a live connection here (none: the
// touch still proves this server's contact with a quorum, serving.go).
func touchBody(ids []int64) []byte {
	return sessions.AppendTouch(append(make([]byte, 0, 1+2*len(ids)), bodyTouch), ids)
}

// applyConf applies a committed configuration change: every replica writes
// the membership it carries to /zookeeper/config at the same place in the
// log (watchers of the node are told), and the server adopts it. The tree
// lock is held.
func (r *replicated) applyConf(c *replica.Committed) {
	s := r.s
	if len(c.Conf.Context) == 0 {
		s.membership.setVoters(c.Conf.Voters)
		return
	}
	mtime, membership := decodeConfContext(c.Conf.Context)
	data := append(bytes.Clone(membership), fmt.Sprintf("version=%x\n", uint64(c.Zxid))...)
	trig := s.tree.SetConfig(data, int64(c.Zxid), mtime)
	r.deliveries = s.triggerWatches([]datatree.Trigger{trig}, r.deliveries[:0])
	r.snapDue.applied()
	r.adoptMembership(data, c.Conf.Voters)
	s.log.Info("configuration changed", "zxid", fmt.Sprintf("0x%x", uint64(c.Zxid)), "groups", fmt.Sprint(c.Conf.Voters.Groups))
	s.checkMember(int64(c.Zxid))
}

// adoptMembership makes the membership in data (the /zookeeper/config
// format; empty: the static one) and voters the server's committed view.
func (r *replicated) adoptMembership(data []byte, voters quorum.Config) {
	s := r.s
	m := members.Static(s.cfg.Ensemble.Members)
	if len(bytes.TrimSpace(data)) > 0 {
		var err error
		if m, err = members.Decode(data); err != nil {
			s.log.Error("undecodable /zookeeper/config", "err", err)
			return
		}
		s.learnAddresses(r.transport, data)
	}
	if len(voters.Groups) == 0 {
		_, voters, _ = s.membership.get()
	}
	s.membership.set(m, voters)
}
