package sim

import (
	"math/rand"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// disk is what a server's stable storage holds: only state whose fsync
// completed. A crash loses everything else.
type disk struct {
	hs   gpaxos.HardState
	snap *gpaxos.Snapshot
	ents []gpaxos.Entry
}

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
	return gpaxos.Config{ID: sv.id, Voters: v, Topology: topo, HeartbeatTicks: s.p.HeartbeatTicks,
		ElectionTicks: s.p.ElectionTicks, MaxBatch: s.p.MaxBatch, Rand: sv.rng.Intn, Joining: sv.initial != nil}
}

// start (re)creates sv's node from its disk.
func (s *Sim) start(sv *server) error {
	n, err := gpaxos.RestartNode(s.nodeConfig(sv), sv.disk.hs, sv.disk.snap, sv.disk.ents)
	if err != nil {
		return err
	}
	sv.node, sv.up, sv.paused, sv.busy, sv.inbox = n, true, false, false, nil
	sv.kv, sv.pos, sv.snapIdx = kvStore{}, -1, 0
	if sv.disk.snap != nil {
		sv.kv = restoreKV(sv.disk.snap.Data)
		sv.snapIdx = sv.disk.snap.Index
		p, ok := s.chk.posOf[sv.disk.snap.Index]
		if !ok {
			s.fail(failCorrectness, "server %d restarted from snapshot at %v that no server applied", sv.id, sv.disk.snap.Index)
		}
		sv.pos = p
	}
	return nil
}

// crash stops sv; whatever it had not fsynced is lost with it.
func (s *Sim) crash(sv *server) {
	sv.up, sv.node, sv.inbox, sv.busy, sv.kv = false, nil, nil, false, nil
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
		fsync = s.p.FsyncUS
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
		snap := *rd.Snapshot
		d.snap, d.ents = &snap, nil
	}
	if rd.TruncateAfter != nil {
		z := *rd.TruncateAfter
		i := len(d.ents)
		for i > 0 && d.ents[i-1].Zxid > z {
			i--
		}
		d.ents = d.ents[:i]
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
		sv.kv = restoreKV(rd.Snapshot.Data)
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
		res := sv.kv.apply(op)
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
				snap := gpaxos.Snapshot{Index: last, Voters: sv.node.ConfigAt(last), Data: data}
				sv.disk.snap = &snap
				i := 0
				for i < len(sv.disk.ents) && sv.disk.ents[i].Zxid <= last {
					i++
				}
				sv.disk.ents = append([]gpaxos.Entry(nil), sv.disk.ents[i:]...)
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

// tickLoop ticks sv every TickUS from a per-server phase.
func (s *Sim) tickLoop(sv *server) {
	s.clk.after(s.p.TickUS, func() {
		if sv.up && !sv.paused && !s.failed() {
			sv.node.Tick()
			s.checkNode(sv)
			s.kick(sv)
		}
		s.tickLoop(sv)
	})
}
