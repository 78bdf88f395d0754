package sim

import (
	"math/rand"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// server is one simulated machine.
type server struct {
	id      gpaxos.ID
	idx     int
	node    *gpaxos.Node
	up      bool
	paused  bool
	inc     int // incarnation: events of a crashed incarnation are void
	inbox   []gpaxos.Message
	busy    bool
	disk    disk
	kv      kvStore
	pos     int // position in the canonical sequence of the last applied entry
	rng     *rand.Rand
	cpuUS   float64
	sent    int
	snapIdx gpaxos.Zxid
	// nicFreeUS is when the server's network interface finishes sending
	// what it was given (bench runs with a bandwidth).
	nicFreeUS int64
	// windowCPUUS is the CPU time spent inside a benchmark's window, and
	// window the messages it received and sent there.
	windowCPUUS float64
	window      traffic
	// initial, for a spare, is the configuration that added it (its node
	// starts from it, with an empty disk).
	initial *quorum.Config
	// lives counts the incarnations of the server's durable state.
	lives int
	// skew is how far this server's tick period is from TickUS, as a
	// fraction (Params.TickSkew).
	skew float64
	// stallUntil is when the fsync under way ends, if it stalled;
	// tickMissed, that the node missed ticks meanwhile.
	stallUntil int64
	tickMissed bool
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

// start (re)creates sv's node from its disk: the hard state, the newest
// snapshot and the log after it.
func (s *Sim) start(sv *server) error {
	snap := sv.disk.snap()
	var ents []gpaxos.Entry
	if snap != nil {
		ents = sv.disk.entsAfter(snap.Index)
	} else {
		ents = sv.disk.ents
	}
	n, err := gpaxos.RestartNode(s.nodeConfig(sv), sv.disk.hs, snap, ents)
	if err != nil {
		return err
	}
	sv.node, sv.up, sv.paused, sv.busy, sv.inbox, sv.stallUntil, sv.tickMissed = n, true, false, false, nil, 0, false
	sv.kv, sv.pos, sv.snapIdx = newKV(s.p.DupProb > 0), -1, 0
	sv.disk.formatted = true
	if snap != nil {
		sv.kv = restoreKV(snap.Data, s.p.DupProb > 0)
		sv.snapIdx = snap.Index
		p, ok := s.chk.posOf[snap.Index]
		if !ok {
			s.fail(failCorrectness, "server %d restarted from snapshot at %v that no server applied", sv.id, snap.Index)
		}
		sv.pos = p
	}
	return nil
}

// crash stops sv; whatever it had not fsynced is lost with it.
func (s *Sim) crash(sv *server) {
	sv.up, sv.node, sv.inbox, sv.busy, sv.kv = false, nil, nil, false, kvStore{}
	sv.inc++
}

// kick lets sv process its inbox: one batch of messages, then one Ready,
// persisted (fsync) before its messages leave. The server is a single queue:
// it is busy for the CPU time of the batch, then for the fsync.
func (s *Sim) kick(sv *server) {
	if !sv.up || sv.paused || sv.busy || s.failed() {
		return
	}
	if len(sv.inbox) == 0 && !sv.node.HasReady() {
		return
	}
	var cost float64
	batch := sv.inbox
	if len(batch) > 512 {
		batch = batch[:512]
	}
	sv.inbox = sv.inbox[len(batch):]
	for _, m := range batch {
		sv.node.Step(m)
		cost += s.msgCost(&m)
		s.count(sv, &m, false)
		s.checkNode(sv)
	}
	inc := sv.inc
	sv.busy = true
	if !sv.node.HasReady() {
		s.chargeCPU(sv, cost)
		s.clk.after(int64(cost), func() {
			if sv.inc == inc {
				sv.busy = false
				s.kick(sv)
			}
		})
		return
	}
	rd := sv.node.Ready()
	for i := range rd.Early {
		cost += s.msgCost(&rd.Early[i])
		s.count(sv, &rd.Early[i], true)
	}
	for i := range rd.Messages {
		cost += s.msgCost(&rd.Messages[i])
		s.count(sv, &rd.Messages[i], true)
	}
	s.chargeCPU(sv, cost)
	var fsync int64
	if rd.HardState != nil || rd.Snapshot != nil || rd.TruncateAfter != nil || len(rd.Entries) > 0 {
		fsync = s.p.FsyncUS + s.fsyncStall(sv, int64(cost)+s.p.FsyncUS)
	}
	if len(rd.Early) > 0 {
		// The early messages leave once their CPU is paid, while the
		// fsync runs; a crash during it loses the Ready but not them.
		s.clk.after(int64(cost), func() {
			if sv.inc != inc {
				return
			}
			for _, m := range rd.Early {
				s.sendMsg(sv, m)
			}
		})
	}
	s.clk.after(int64(cost)+fsync, func() {
		if sv.inc != inc {
			return // crashed before the fsync completed: the Ready is lost
		}
		s.persist(sv, rd)
		for _, m := range rd.Messages {
			s.sendMsg(sv, m)
		}
		s.applyCommitted(sv, rd)
		sv.node.Advance()
		sv.busy = false
		if sv.tickMissed {
			sv.tickMissed = false
			sv.node.Tick()
		}
		s.checkNode(sv)
		s.kick(sv)
	})
}

// chargeCPU makes sv busy for cost µs from now. Benchmarks count only the
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
}

// count adds m, received or sent by sv now, to sv's window traffic when
// now is inside a benchmark's measured window.
func (s *Sim) count(sv *server, m *gpaxos.Message, sent bool) {
	if l := s.load; l == nil || s.clk.now < l.from || s.clk.now >= l.to {
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

func (s *Sim) msgCost(m *gpaxos.Message) float64 {
	return s.p.Cost.CPUPerMsgUS + s.p.Cost.CPUPerByteUS*float64(m.Size())
}

// persist makes rd's state durable on sv's disk, checking on the way that
// promises never go backwards and that a zxid always names one entry.
func (s *Sim) persist(sv *server, rd gpaxos.Ready) {
	d := &sv.disk
	if rd.HardState != nil {
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

func (s *Sim) deliver(sv *server, m gpaxos.Message) {
	if !sv.up {
		return
	}

	sv.inbox = append(sv.inbox, m)
	s.kick(sv)
}

// applyCommitted applies rd's committed entries to sv's store, feeds the
// agreement checker, answers this server's clients, and compacts the log.
func (s *Sim) applyCommitted(sv *server, rd gpaxos.Ready) {
	if rd.Snapshot != nil {
		sv.kv = restoreKV(rd.Snapshot.Data, s.p.DupProb > 0)
		sv.snapIdx = rd.Snapshot.Index
		p, ok := s.chk.posOf[rd.Snapshot.Index]
		if !ok {
			s.fail(failCorrectness, "server %d installed a snapshot at %v that no server applied", sv.id, rd.Snapshot.Index)
			return
		}
		sv.pos = p
	}
	for _, e := range rd.CommittedEntries {
		s.chk.applied(s, sv, e)
		if e.Type != gpaxos.EntryNormal {
			continue
		}
		if s.load != nil && isBenchPayload(e.Data) {
			s.load.applied(s, sv, e)
			continue
		}
		op, ok := decodeOp(e.Data)
		if !ok {
			continue
		}
		res, applied := sv.kv.apply(op)
		if !applied {
			continue
		}
		s.stats.commitAt(s, e.Zxid)
		s.clientReply(sv, op, res, e.Zxid)
	}
	if len(rd.CommittedEntries) > 0 {
		last := rd.CommittedEntries[len(rd.CommittedEntries)-1].Zxid
		if s.chk.posOf[last]-s.posOfSnap(sv) >= s.p.SnapEvery {
			data := sv.kv.snapshot()
			if err := sv.node.Compact(last, data); err == nil {
				// The host writes its own snapshot atomically (write, fsync,
				// rename), so it is durable at once.
				sv.disk.saveSnapshot(gpaxos.Snapshot{Index: last, Voters: sv.node.ConfigAt(last), Data: data}, false)
				sv.snapIdx = last
			}
		}
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
		if sv.node != nil {
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
// A server ticks while it waits for an ordinary fsync (a fraction of a
// tick), but not through a stalled one: a production server ticks its node
// from the goroutine that fsyncs, and its ticker keeps one missed tick, so
// it sees one tick when the stall ends. A node ticked through a stall of
// seconds would time out and campaign again and again with none of it
// reaching the disk or the network, which no server does.
func (s *Sim) tickLoop(sv *server) {
	s.clk.after(s.tickPeriod(sv), func() {
		if sv.stallUntil > s.clk.now {
			sv.tickMissed = true
		} else if sv.up && !sv.paused && !s.failed() {
			sv.node.Tick()
			s.checkNode(sv)
			s.kick(sv)
		}
		s.tickLoop(sv)
	})
}
