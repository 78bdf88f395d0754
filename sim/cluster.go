package sim

import (
	"bytes"
	"log/slog"
	"math/rand"
	"slices"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
)

// server is one simulated machine: the production replica host
// (internal/replica.Host) over the simulator's clock, disk and network,
// applying what commits to a data tree (internal/datatree).
type server struct {
	id     gpaxos.ID
	idx    int
	host   *replica.Host
	tree   *datatree.Tree
	up     bool
	paused bool
	inc    int // incarnation: events of a crashed incarnation are void
	inbox  []gpaxos.Message
	// outbox holds what the host sent (HostConfig.Send) until the server
	// has paid for it.
	outbox []gpaxos.Message
	// busy: the server's loop is paying for CPU it spent. persisting is
	// the Ready its storage is making durable, synced that the disk has
	// finished it and the loop has yet to take note (replica.Replica's
	// storage goroutine, which runs beside the loop).
	busy       bool
	persisting *gpaxos.Ready
	synced     bool
	disk       disk
	// pending are the client operations this server proposed and has not
	// answered, in the order it proposed them.
	pending []*pendingReq
	// probed: a probe this server proposed in the liveness phase has
	// committed (converged); probeSent: one is on its way.
	probed, probeSent bool
	pos               int         // position in the canonical sequence of the last applied entry
	applied           gpaxos.Zxid // the last applied entry
	rng               *rand.Rand
	cpuUS             float64
	sent              int
	snapIdx           gpaxos.Zxid
	// nicFreeUS is when the server's network interface finishes sending
	// what it was given (bench runs with a bandwidth).
	nicFreeUS int64
	// laneFreeUS is, per peer (by index), when the snapshot this server
	// is sending it has arrived (Params.SnapTransferUS).
	laneFreeUS map[int]int64
	// windowCPUUS is the CPU time spent inside a benchmark's window, and
	// window the messages it received and sent there.
	windowCPUUS float64
	window      traffic
	// owedUS is CPU time spent off the protocol loop (besideLoop) that the
	// loop has yet to yield its core for.
	owedUS float64
	// initial, for a spare, is the configuration that added it (its node
	// starts from it, with an empty disk).
	initial *quorum.Config
	// lives counts the incarnations of the server's durable state.
	lives int
	// skew is how far this server's tick period is from TickUS, as a
	// fraction (Params.TickSkew).
	skew float64
	// stallUntil is when the fsync under way ends, if it stalled.
	stallUntil int64
	// tickMissed: a tick came while the server was busy; the host sees it
	// when the server is next idle.
	tickMissed bool
	// ss is the session layer of this incarnation (nil without lockers),
	// owners the replicated table of session owners, kept with the tree.
	ss     *sessionServer
	owners *sessions.Owners
	// weak is this incarnation's speculative state while it leads, in a
	// run with weak registers (weak.go); nil otherwise.
	weak *weakLeader
}

// voters is the voting configuration of servers 1..Nodes
// (members.Voters).
func voters(p Params) (quorum.Config, error) {
	ids := make([]quorum.ID, p.Nodes)
	for i := range ids {
		ids[i] = quorum.ID(i + 1)
	}
	return members.Voters(p.Shape, ids)
}

// nodeConfig is server id's gpaxos configuration.
func (s *Sim) nodeConfig(sv *server) gpaxos.Config {
	topo := s.p.Shape.Topology()
	v := s.voters
	if sv.initial != nil {
		v = *sv.initial
	}
	if sv.disk.incarnation == 0 {
		s.newIncarnation(sv) // the first start writes the identity
	}
	return gpaxos.Config{ID: sv.id, Voters: v, Topology: topo, HeartbeatTicks: s.p.HeartbeatTicks,
		ElectionTicks: s.p.ElectionTicks, MaxBatch: s.p.MaxBatch, Rand: sv.rng.Intn, Joining: sv.initial != nil,
		Incarnation: sv.disk.incarnation, Recovering: sv.disk.recovering}
}

// simClock is the hosts' clock: the simulator's virtual time.
type simClock struct{ s *Sim }

func (c simClock) Now() time.Time { return time.UnixMicro(c.s.clk.now) }

// start (re)creates sv's host from its disk: the hard state, the newest
// snapshot and the log after it, the identity (incarnation, recovery mark,
// count of starts).
func (s *Sim) start(sv *server) error {
	snap, ents := sv.disk.restartLog()
	sv.up, sv.paused, sv.busy, sv.inbox, sv.outbox, sv.stallUntil, sv.tickMissed = true, false, false, nil, nil, 0, false
	sv.persisting, sv.synced = nil, false
	sv.tree, sv.pending, sv.pos, sv.applied, sv.snapIdx = newTree(s.p.Clients, s.p.Keys), nil, -1, 0, 0
	sv.owners = sessions.NewOwners()
	node := s.nodeConfig(sv)
	sv.disk.formatted = true
	sv.disk.boots++
	cfg := replica.HostConfig{
		Node:            node,
		Boots:           sv.disk.boots,
		Tick:            time.Duration(s.p.TickUS) * time.Microsecond,
		ProposalTimeout: 10 * time.Duration(s.p.ElectionTicks*int(s.p.TickUS)) * time.Microsecond,
		Clock:           simClock{s},
		Send:            func(m gpaxos.Message) { sv.outbox = append(sv.outbox, m) },
		Deliver:         func(d replica.Delivery) { s.apply(sv, d) },
		OnRecovered: func() error {
			sv.disk.recovering = false // the identity is rewritten at once
			return nil
		},
		OnLeaderReceived: func(_ gpaxos.ID, body []byte) { s.leaderReceived(sv, body) },
		Logger:           s.hostLogger(sv),
	}
	if s.p.WeakKeys > 0 {
		sv.weak = &weakLeader{}
		cfg.OnLeaderAppend = func(la replica.LeaderAppend) { s.leaderAppend(sv, la) }
		cfg.AcceptEarly = true
	}
	h, err := replica.NewHost(cfg, sv.disk.hs, snap, ents)
	if err != nil {
		sv.up = false
		return err
	}
	sv.host = h
	if s.p.Lockers > 0 {
		sv.ss = s.newSessionServer(sv)
	}
	return nil
}

// hostLogger is where sv's host logs: the fault log, in verbose runs.
func (s *Sim) hostLogger(sv *server) *slog.Logger {
	if s.log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(hostLogWriter{s}, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	})).With("server", int(sv.id))
}

// hostLogWriter writes the hosts' log lines into the fault log.
type hostLogWriter struct{ s *Sim }

func (w hostLogWriter) Write(b []byte) (int, error) {
	w.s.note("host: %s", strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// crash stops sv; whatever it had not fsynced is lost with it, and so are
// the requests it had not answered.
func (s *Sim) crash(sv *server) {
	sv.up, sv.host, sv.tree, sv.inbox, sv.outbox, sv.pending, sv.busy, sv.ss = false, nil, nil, nil, nil, nil, false, nil
	sv.persisting, sv.synced, sv.owedUS = nil, false, 0
	sv.inc++
}

// kick lets sv take new work as replica.Replica's loop does: the end of
// its storage's persist, if the disk finished one, one batch of messages
// and the proposals queued, then the host's Readies until it is quiet
// (pump). The loop is a single queue, busy for the CPU time of the batch
// and of the messages it sends; the disk runs beside it, one persist at
// a time, and the loop goes on stepping messages during an fsync.
func (s *Sim) kick(sv *server) {
	if !sv.up || sv.paused || sv.busy || s.failed() {
		return
	}
	cost := s.takeWaiting(sv)
	if s.failed() {
		return
	}
	s.pump(sv, cost)
}

// takeWaiting is replica.Replica's takeWaiting: sv's host takes the end
// of a persist, a tick it missed, one batch of the messages waiting and
// the proposals queued; it returns the CPU time of the messages.
func (s *Sim) takeWaiting(sv *server) float64 {
	if sv.synced {
		rd := *sv.persisting
		sv.persisting, sv.synced = nil, false
		if err := sv.host.Persisted(rd); err != nil {
			s.fail(failCrash, "server %d: %v", sv.id, err)
			return 0
		}
		s.maybeSnapshot(sv)
		s.checkNode(sv)
		if s.failed() {
			return 0
		}
	}
	if sv.tickMissed {
		sv.tickMissed = false
		sv.host.Tick()
		s.checkNode(sv)
	}
	var cost float64
	batch := sv.inbox
	if len(batch) > 512 {
		batch = batch[:512]
	}
	sv.inbox = sv.inbox[len(batch):]
	for _, m := range batch {
		sv.host.Step(m)
		cost += s.recvCost(&m)
		s.count(sv, &m, false)
		s.checkNode(sv)
	}
	sv.host.TakeQueued()
	return cost
}

// pump is replica.Replica's pump: the host's Readies until it is quiet.
// Early messages and what the host sent leave once their CPU is paid;
// a Ready with something to write goes to the disk, whose fsync starts
// then and runs beside the loop (a crash during it loses the Ready, not
// what left); its Messages leave after it, when the loop takes note.
// cost is the CPU time of the work that came before, which the loop pays
// first.
func (s *Sim) pump(sv *server, cost float64) {
	var out []gpaxos.Message
	// On shared cores the fsync starts once the loop has had its core,
	// which is known when the loop's whole CPU time is. With a core per
	// server it starts where the Ready is taken, as it always has, so that
	// the fault runs' events keep their order and their seeds replay.
	var persist *gpaxos.Ready
	var persistAfter float64
	take := func() {
		for i := range sv.outbox {
			s.count(sv, &sv.outbox[i], true)
		}
		out = append(out, sv.outbox...)
		sv.outbox = nil
	}
	take()
	cost += sv.owedUS
	sv.owedUS = 0
	for {
		rd, ok := sv.host.NextReady()
		take()
		if !ok {
			break
		}
		for i := range rd.Early {
			s.count(sv, &rd.Early[i], true)
		}
		out = append(out, rd.Early...)
		// The Messages are counted and paid for when Persisted sends them
		// (through the outbox).
		if rd.Overlapped {
			continue
		}
		if !rd.MustWrite(sv.disk.hs) {
			if err := sv.host.Persisted(rd); err != nil {
				s.fail(failCrash, "server %d: %v", sv.id, err)
				return
			}
			s.maybeSnapshot(sv)
			s.checkNode(sv)
			if s.failed() {
				return
			}
			take()
			continue
		}
		cost += s.persistCPU(sv, &rd)
		if s.p.Cost.SharedCores > 0 {
			persist, persistAfter = &rd, cost
		} else {
			s.startPersist(sv, rd, cost)
		}
	}
	for i := range out {
		cost += s.msgCost(&out[i])
	}
	wait := s.onCore(cost)
	if persist != nil {
		s.startPersist(sv, *persist, wait+persistAfter)
	}
	if cost == 0 && len(out) == 0 {
		if sv.busy {
			s.idle(sv)
		}
		return
	}
	inc := sv.inc
	sv.busy = true
	s.chargeCPU(sv, cost)
	s.clk.after(int64(wait+cost), func() {
		if sv.inc == inc {
			s.sendAll(sv, out)
			s.idle(sv)
		}
	})
}

// startPersist hands rd to sv's disk after the loop's CPU time after:
// one fsync later rd is durable, and the loop takes note when it is next
// free.
func (s *Sim) startPersist(sv *server, rd gpaxos.Ready, after float64) {
	sv.persisting = &rd
	fsync := s.p.FsyncUS + s.fsyncStall(sv, int64(after)+s.p.FsyncUS)
	inc := sv.inc
	s.clk.after(int64(after)+fsync, func() {
		if sv.inc != inc {
			return // crashed before the fsync completed: the Ready is lost
		}
		s.persist(sv, rd)
		sv.synced = true
		s.kick(sv)
	})
}

// persistCPU is the CPU time of writing rd to the log (its entries and
// one fsync) and of applying its entries later; it counts the fsync in
// sv's window traffic.
func (s *Sim) persistCPU(sv *server, rd *gpaxos.Ready) float64 {
	if l := s.load; l != nil && s.clk.now >= l.from && s.clk.now < l.to {
		sv.window.fsyncs++
	}
	return s.p.Cost.FsyncCPUUS + s.p.Cost.CPUPerEntryUS*float64(len(rd.Entries))
}

// idle ends a busy period of sv: the host sees the tick it missed, if
// any (a production replica's ticker keeps one), and sv takes the next
// work.
func (s *Sim) idle(sv *server) {
	sv.busy = false
	if sv.tickMissed && !sv.paused && !s.failed() {
		sv.tickMissed = false
		sv.host.Tick()
		s.checkNode(sv)
	}
	s.kick(sv)
}

func (s *Sim) sendAll(sv *server, ms []gpaxos.Message) {
	for _, m := range ms {
		s.sendMsg(sv, m)
	}
}

// onCore takes one of the machine's shared cores for cost µs from the
// moment the first one is free, and returns how long from now the work
// waits for it; without shared cores (Cost.SharedCores) every server has
// its own and nothing waits.
func (s *Sim) onCore(cost float64) float64 {
	if s.p.Cost.SharedCores <= 0 || cost <= 0 {
		return 0
	}
	if s.coresFree == nil {
		s.coresFree = make([]float64, s.p.Cost.SharedCores)
	}
	k := 0
	for i, free := range s.coresFree {
		if free < s.coresFree[k] {
			k = i
		}
	}
	start := max(float64(s.clk.now), s.coresFree[k])
	s.coresFree[k] = start + cost
	return start - float64(s.clk.now)
}

// besideLoop charges sv for cost µs of work done off its protocol loop
// (client handling, timers). The server has one core (its own, or one of
// the machine's shared ones at a time, as a Go server with GOMAXPROCS=1),
// so the loop pays for it at its next turn, before its own work.
func (s *Sim) besideLoop(sv *server, cost float64) {
	if cost <= 0 {
		return
	}
	sv.owedUS += cost
	if !sv.busy {
		s.kick(sv)
	}
}

// chargeCPU counts cost µs of CPU time sv spends from now (the caller
// holds its loop or a core for it). Benchmarks count only the
// part inside their measured window, so a long step that straddles its end
// is not counted whole.
func (s *Sim) chargeCPU(sv *server, cost float64) {
	sv.cpuUS += cost
	if l := s.load; l != nil {
		from, to := float64(max(s.clk.now, l.from)), float64(min(float64(s.clk.now)+cost, float64(l.to)))
		if to > from {
			sv.windowCPUUS += to - from
		}
	}
}

// traffic counts the messages a server received and sent, and their bytes.
type traffic struct {
	recvMsgs, sentMsgs   int
	recvBytes, sentBytes int
	fsyncs               int
}

// count adds m, received or sent by sv now, to sv's window traffic when
// now is inside a benchmark's measured window. A message to itself is not
// traffic (the real transport's counters leave it out too).
func (s *Sim) count(sv *server, m *gpaxos.Message, sent bool) {
	if l := s.load; l == nil || s.clk.now < l.from || s.clk.now >= l.to || m.From == m.To {
		return
	}
	if sent {
		sv.window.sentMsgs++
		sv.window.sentBytes += m.Size()
	} else {
		sv.window.recvMsgs++
		sv.window.recvBytes += m.Size()
	}
}

// recvCost is the CPU time of receiving m: msgCost, with the per-message
// part CPUPerRecvMsgUS when the model sets it.
func (s *Sim) recvCost(m *gpaxos.Message) float64 {
	c := s.msgCost(m)
	if c > 0 && s.p.Cost.CPUPerRecvMsgUS > 0 {
		c += s.p.Cost.CPUPerRecvMsgUS - s.p.Cost.CPUPerMsgUS
	}
	return c
}

func (s *Sim) msgCost(m *gpaxos.Message) float64 {
	if s.p.Cost.SelfMsgsFree && m.From == m.To {
		return 0
	}
	return s.p.Cost.CPUPerMsgUS + s.p.Cost.CPUPerByteUS*float64(m.Size())
}

// persist makes rd's state durable on sv's disk, checking on the way that
// promises never go backwards and that a zxid always names one entry.
func (s *Sim) persist(sv *server, rd gpaxos.Ready) {
	d := &sv.disk
	if rd.HardState != nil && rd.WritesHardState(d.hs) {
		// Like the replica's storage, a new commit point alone is not
		// written (Ready.WritesHardState).
		if rd.HardState.Promised < d.hs.Promised || rd.HardState.Current < d.hs.Current || rd.HardState.GroupEpoch < d.hs.GroupEpoch {
			s.fail(failCorrectness, "server %d: durable epochs went backwards: %+v -> %+v", sv.id, d.hs, *rd.HardState)
		}
		d.hs = *rd.HardState
	}
	if rd.Snapshot != nil {
		d.saveSnapshot(*rd.Snapshot, true)
	}
	if rd.TruncateAfter != nil {
		d.truncateAfter(*rd.TruncateAfter)
	}
	for _, e := range rd.Entries {
		s.chk.recordEntry(s, e)
		if len(d.ents) > 0 && d.ents[len(d.ents)-1].Zxid >= e.Zxid {
			s.fail(failCorrectness, "server %d: entry %v appended out of order", sv.id, e.Zxid)
		}
		d.ents = append(d.ents, e)
	}
}

// sendMsg puts m on the network (or loops it back to sv).

func (s *Sim) sendMsg(sv *server, m gpaxos.Message) {
	sv.sent++
	s.stats.msgs++
	to := s.byID(m.To)
	if to == nil {
		return
	}
	if to == sv {
		s.clk.after(0, func() { s.deliver(to, m) })
		return
	}
	if s.net.blocked(sv.idx, to.idx) || (s.net.drop > 0 && s.rng.Float64() < s.net.drop) {
		return
	}
	d := s.net.delay(s.rng) + s.p.Cost.LinkLatencyUS
	if m.Snapshot != nil && s.p.SnapTransferUS > 0 {
		s.sendSnapshot(sv, to, m, d)
		return
	}
	if s.net.dup > 0 && s.xrng.Float64() < s.net.dup {
		// The copy travels on its own: it may arrive first, or after a
		// partition or a restart that the original missed.
		c := cloneMessage(m)
		d2 := s.net.delay(s.xrng) + s.p.Cost.LinkLatencyUS
		if s.xrng.Intn(4) == 0 {
			d2 += s.xrng.Int63n(1_000_000)
		}
		s.clk.after(d2, func() { s.deliver(to, c) })
	}
	if s.p.Cost.BandwidthBpUS > 0 {
		// The sender's network interface is a queue of its own: a message
		// leaves when the ones before it have been put on the wire.
		start := max(s.clk.now, sv.nicFreeUS)
		sv.nicFreeUS = start + int64(float64(m.Size())/s.p.Cost.BandwidthBpUS)
		d += sv.nicFreeUS - s.clk.now
	}
	s.clk.after(d, func() { s.deliver(to, m) })
}

// sendSnapshot puts a message carrying a snapshot on sv's snapshot lane
// to peer `to`, as the transport does: it arrives SnapTransferUS (plus
// delay d) later unless the sender restarts or the link is cut meanwhile
// (the transport drops a snapshot whose connection breaks), and a
// snapshot sent while another is on its way is dropped.
func (s *Sim) sendSnapshot(sv, to *server, m gpaxos.Message, d int64) {
	if s.clk.now < sv.laneFreeUS[to.idx] {
		return
	}
	if sv.laneFreeUS == nil {
		sv.laneFreeUS = map[int]int64{}
	}
	done := s.clk.now + d + s.p.SnapTransferUS
	sv.laneFreeUS[to.idx] = done
	inc, cut := sv.inc, false
	var watch func()
	watch = func() {
		// The transfer breaks if the link is cut or the sender restarts
		// at any point while it is under way: look every millisecond.
		if s.net.blocked(sv.idx, to.idx) || sv.inc != inc || !sv.up {
			cut = true
			sv.laneFreeUS[to.idx] = 0
			return
		}
		if s.clk.now+1000 < done {
			s.clk.after(1000, watch)
		}
	}
	s.clk.after(1000, watch)
	s.clk.after(d+s.p.SnapTransferUS, func() {
		if !cut {
			s.deliver(to, m)
		}
	})
}

func (s *Sim) deliver(sv *server, m gpaxos.Message) {
	if !sv.up {
		return
	}

	sv.inbox = append(sv.inbox, m)
	s.kick(sv)
}

// apply is sv's application (HostConfig.Deliver): it installs a
// snapshot's tree, applies committed entries to the tree, feeds the
// agreement checker, answers this server's clients, and files or fails
// their requests as the host renumbers or abandons their proposals.
func (s *Sim) apply(sv *server, d replica.Delivery) {
	if sn := d.Snapshot; sn != nil {
		owners, data, err := sessions.SplitOwners(sn.Data)
		if err != nil {
			s.fail(failCorrectness, "server %d: snapshot at %v unreadable: %v", sv.id, sn.Index, err)
			return
		}
		t, err := datatree.ReadSnapshot(bytes.NewReader(data))
		if err != nil {
			s.fail(failCorrectness, "server %d: snapshot at %v unreadable: %v", sv.id, sn.Index, err)
			return
		}
		sv.tree, sv.owners, sv.applied, sv.snapIdx = t, owners, sn.Index, sn.Index
		s.chk.installed(s, sv, sn.Index, t.Digest())
		s.sessionSnapshot(sv)
	}
	for i := range d.Entries {
		if s.failed() {
			return
		}
		s.applyEntry(sv, &d.Entries[i])
	}
	if len(d.Resent) > 0 {
		sv.resent(d.Resent)
		sv.sessionResent(d.Resent)
	}
	if len(d.Early) > 0 {
		s.early(sv, d.Early)
	}
	if d.Abandoned != 0 {
		s.abandon(sv, d.Abandoned)
		s.sessionAbandon(sv, d.Abandoned)
	}
}

// applyEntry applies one committed entry to sv's tree.
func (s *Sim) applyEntry(sv *server, cm *replica.Committed) {
	sv.applied = cm.Zxid
	if s.load != nil && !cm.Noop && isBenchPayload(cm.Body) {
		s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
		s.load.applied(s, sv, cm)
		return
	}
	if !cm.Noop && isSessionBody(cm.Body) {
		s.applySession(sv, cm)
		return
	}
	op, e, ok := decodeRegOp(cm.Body)
	if cm.Own && isProbe(cm.Body) {
		sv.probed = true
	}
	if cm.Noop || !ok {
		// A leader's no-op or a configuration entry (whose context, empty
		// here, is what production writes to /zookeeper/config) leaves the
		// tree as it was.
		s.chk.applied(s, sv, cm, sv.tree.Digest(), nil)
		return
	}
	e.Zxid = int64(cm.Zxid)
	out := applyReg(sv.tree, op, e)
	s.chk.applied(s, sv, cm, sv.tree.Digest(), &op)
	s.stats.commitAt(s, cm.Zxid)
	if cm.Own {
		s.complete(sv, cm, out)
	}
}

// maybeSnapshot snapshots sv's tree every SnapEvery entries and lets the
// host compact its log up to there.
func (s *Sim) maybeSnapshot(sv *server) {
	if sv.pos < 0 || sv.pos-s.posOfSnap(sv) < s.p.SnapEvery {
		return
	}
	var buf bytes.Buffer
	if s.p.Lockers > 0 {
		// Like a server's snapshot; runs without sessions keep the
		// snapshot bytes (and so the timings) they always had.
		buf.Write(sv.owners.AppendTo(nil))
	}
	if err := sv.tree.WriteSnapshot(&buf); err != nil {
		s.fail(failCrash, "server %d: snapshot: %v", sv.id, err)
		return
	}
	last := sv.applied
	if err := sv.host.Compact(last, buf.Bytes()); err == nil {
		// The host writes its own snapshot atomically (write, fsync,
		// rename), so it is durable at once.
		sv.disk.saveSnapshot(gpaxos.Snapshot{Index: last, Voters: sv.host.ConfigAt(last), Data: buf.Bytes()}, false)
		sv.snapIdx = last
	}
}

func (s *Sim) posOfSnap(sv *server) int {
	if sv.snapIdx == 0 {
		return -1
	}
	return s.chk.posOf[sv.snapIdx]
}

func (s *Sim) byID(id gpaxos.ID) *server {
	i := int(id) - 1
	switch {
	case i < 0:
		return nil
	case i < len(s.servers):
		return s.servers[i]
	case i-len(s.servers) < len(s.spares):
		return s.spares[i-len(s.servers)]
	}
	return nil
}

// members returns the initial servers and the spares added so far.
func (s *Sim) members() []*server {
	out := s.servers
	for _, sv := range s.spares {
		if sv.host != nil {
			out = append(out[:len(out):len(out)], sv)
		}
	}
	return out
}

// cloneMessage copies m as a receiver decodes it: nothing shared with
// another copy.
func cloneMessage(m gpaxos.Message) gpaxos.Message {
	m.Entries = slices.Clone(m.Entries)
	m.Down, m.GCs = slices.Clone(m.Down), slices.Clone(m.GCs)
	m.Promisers, m.Members = slices.Clone(m.Promisers), slices.Clone(m.Members)
	if m.Snapshot != nil {
		sn := *m.Snapshot
		m.Snapshot = &sn
	}
	return m
}

// fsyncStall is how much longer than usual an fsync of sv that starts in
// after µs takes: usually nothing; with probability StallProb in the safety
// phase, a stall of StallMinUS to StallMaxUS that ends by the heal, as long
// as fewer than MaxDown servers are down, paused or stalled.
func (s *Sim) fsyncStall(sv *server, after int64) int64 {
	if s.p.StallProb == 0 || s.clk.now >= s.p.SafetyUS || s.xrng.Float64() >= s.p.StallProb {
		return 0
	}
	d := s.p.StallMinUS + s.xrng.Int63n(s.p.StallMaxUS-s.p.StallMinUS)
	d = min(d, s.p.SafetyUS-s.clk.now-after)
	if d <= 0 || s.countDown() >= s.p.MaxDown {
		return 0
	}
	sv.stallUntil = s.clk.now + after + d
	s.note("fsync stall %d: %d ms", sv.id, d/1000)
	return d
}

// tickPeriod is sv's next tick period: TickUS, off by the server's skew,
// which drifts from tick to tick within ±TickSkew when TickDrift.
func (s *Sim) tickPeriod(sv *server) int64 {
	if s.p.TickSkew == 0 {
		return s.p.TickUS
	}
	if s.p.TickDrift {
		sv.skew = max(-s.p.TickSkew, min(s.p.TickSkew, sv.skew+s.p.TickSkew/10*s.xrng.NormFloat64()))
	}
	return int64(float64(s.p.TickUS) * (1 + sv.skew))
}

// tickLoop ticks sv every tick period (tickPeriod) from a per-server phase.
//
// A production replica ticks its host from the goroutine that steps
// messages, and its ticker keeps one missed tick: a tick that comes while
// the loop is busy with a batch is seen once when it is next free. The
// storage runs beside the loop, so ticks go on during an fsync, however
// long it stalls (the node then goes quiet after a heartbeat, see
// gpaxos.Node.Ready).
func (s *Sim) tickLoop(sv *server) {
	s.clk.after(s.tickPeriod(sv), func() {
		switch {
		case !sv.up || sv.paused || s.failed():
		case sv.busy:
			sv.tickMissed = true
		default:
			sv.host.Tick()
			s.checkNode(sv)
			s.kick(sv)
		}
		if sv.up && s.p.Cost.IdleCPUUSPerSec > 0 {
			s.besideLoop(sv, s.p.Cost.IdleCPUUSPerSec*float64(s.p.TickUS)/1e6)
		}
		s.tickLoop(sv)
	})
}
