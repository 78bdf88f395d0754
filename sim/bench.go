package sim

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
)

// BenchOptions describe one throughput benchmark: a fault-free ensemble
// under a closed-loop write load, timed by the cost model.
type BenchOptions struct {
	members.Shape
	Seed int64
	// Cost is the cost model; the zero value means CalibratedCost.
	Cost Cost
	// PayloadBytes is the size of one write (default 1024).
	PayloadBytes int
	// Outstanding is the number of writes in flight at any time, spread
	// evenly over the servers (default 2000).
	Outstanding int
	// WarmupUS and MeasureUS are the virtual lengths of the warm-up after
	// the first leader is elected and of the measured window (defaults
	// 300 ms and 1 s).
	WarmupUS, MeasureUS int64
	// MaxBatch bounds the entries of one append (default 256).
	MaxBatch int
	// HeartbeatTicks and ElectionTicks are the protocol's timers in ticks
	// of TickUS (defaults 5 and 100 ticks of 10 ms: throughput runs
	// measure the steady state, and a classic leader of hundreds of
	// servers is busy sending a batch for longer than a LAN election
	// timeout; failover runs use 2 and 10; a real server's are 2 and 8
	// ticks of 25 ms).
	HeartbeatTicks, ElectionTicks int
	TickUS                        int64
	// RetryUS is how long a client waits for its write before sending it
	// again (default 2 s); failover runs retry quickly so that the first
	// write after recovery is not a client's timeout.
	RetryUS int64
	// FirstServer is the server (by index) slot 0 writes through; slot i
	// writes through server (FirstServer+i) mod Nodes.
	FirstServer int
	// AtLeader makes every slot write through the first leader, which
	// pays nothing for client requests: the broadcast in isolation (the
	// Giraffe paper's Figure 7).
	AtLeader bool
	// Rate, when positive, makes the load open-loop instead: writes
	// arrive at Rate per second in all, Poisson, each through one of
	// Sessions sessions drawn at random, session i connected to server i
	// mod Nodes (as `giraffe bench --rate` spreads its sessions; default
	// 8 sessions). Outstanding is then unused.
	Rate     float64
	Sessions int
}

// BenchResult is what a benchmark measured, in the JSON form of issue 4.
type BenchResult struct {
	Nodes          int     `json:"nodes"`
	Trees          int     `json:"trees"`
	Children       int     `json:"children"`
	Classic        bool    `json:"classic"`
	ThroughputOps  float64 `json:"throughput_ops"`
	LatencyP50MS   float64 `json:"latency_p50_ms"`
	LatencyP99MS   float64 `json:"latency_p99_ms"`
	GLCPUUSPerComm float64 `json:"gl_cpu_us_per_commit"`
	MaxCPUUtil     float64 `json:"max_cpu_util"`
	GLCPUUtil      float64 `json:"gl_cpu_util"`
	MsgsPerCommit  float64 `json:"msgs_per_commit"`
	// Busiest is the server with the highest CPU use, and its role.
	Busiest     int    `json:"busiest"`
	BusiestRole string `json:"busiest_role"`
	// Leader, Coordinator and Acceptor are the messages and bytes, received
	// and sent, per committed write of the leader, of a coordinator (mean
	// over the others) and of an acceptor (mean over the servers with
	// neither role).
	Leader      RoleTraffic `json:"leader"`
	Coordinator RoleTraffic `json:"coordinator"`
	Acceptor    RoleTraffic `json:"acceptor"`
}

// RoleTraffic is what one server of a role received, sent, fsynced and
// spent in CPU time per committed write.
type RoleTraffic struct {
	RecvMsgs  float64 `json:"recv_msgs"`
	SentMsgs  float64 `json:"sent_msgs"`
	RecvBytes float64 `json:"recv_bytes"`
	SentBytes float64 `json:"sent_bytes"`
	Fsyncs    float64 `json:"fsyncs"`
	CPUUS     float64 `json:"cpu_us"`
}

// roleTraffic is the mean traffic and CPU time of servers per commit.
func roleTraffic(svs []*server, commits int) RoleTraffic {
	var r RoleTraffic
	if len(svs) == 0 || commits == 0 {
		return r
	}
	for _, sv := range svs {
		t := sv.window
		r.RecvMsgs += float64(t.recvMsgs)
		r.SentMsgs += float64(t.sentMsgs)
		r.RecvBytes += float64(t.recvBytes)
		r.SentBytes += float64(t.sentBytes)
		r.Fsyncs += float64(t.fsyncs)
		r.CPUUS += sv.windowCPUUS
	}
	d := float64(len(svs) * commits)
	return RoleTraffic{RecvMsgs: r.RecvMsgs / d, SentMsgs: r.SentMsgs / d, RecvBytes: r.RecvBytes / d,
		SentBytes: r.SentBytes / d, Fsyncs: r.Fsyncs / d, CPUUS: r.CPUUS / d}
}

// CalibratedCost is the cost model fitted to real servers and checked
// against them (docs/benchmarks.md, "The cost model against real
// servers"): the CPU terms per fsync, client write, message sent and
// received and idle second are `giraffe-lab costmodel`'s least-squares
// fit to real ensembles of 3 to 9 servers (`make bench-roles`); the costs
// per byte and per entry and the fsync latency are measured in process by
// `giraffe-lab sim --calibrate` (the transport on loopback TCP, a 1 KiB
// setData through the log and the data tree, the log's fsync). Bandwidth
// and link latency are a 10 Gbit/s LAN's, which loopback cannot measure.
var CalibratedCost = Cost{
	CPUPerMsgUS: 4.4, CPUPerRecvMsgUS: 20.8, CPUPerByteUS: 0.00126, CPUPerEntryUS: 1.6,
	FsyncUS: 900, FsyncCPUUS: 122.5, CPUPerClientWriteUS: 25.2, IdleCPUUSPerSec: 22060, SelfMsgsFree: true,
	BandwidthBpUS: 1250, LinkLatencyUS: 50,
}

// benchMagic starts every benchmark payload, so the apply path can tell
// them from the register workload's operations (regMagic).
const benchMagic = 0xB7

func isBenchPayload(b []byte) bool { return len(b) > 0 && b[0] == benchMagic }

// benchLoad is a write workload. Closed loop: Outstanding slots, each
// bound to one server, each with one write in flight; a slot issues its
// next write when its server has applied the last one. Open loop: a slot
// per write, issued at its arrival time (startOpenLoad).
type benchLoad struct {
	open     bool
	payload  int
	retryUS  int64
	slots    []*benchSlot
	from, to int64 // the measured window
	lat      []int64
	commits  int
	seen     map[gpaxos.Zxid]bool
	// commitHook, when set, is told of every first application of a
	// benchmark entry (failover runs use it), and applyHook of every
	// application at any server (after commitHook for the first).
	commitHook func(z gpaxos.Zxid, at int64)
	applyHook  func(sv *server, z gpaxos.Zxid, at int64)
}

type benchSlot struct {
	id, server int
	seq        int
	call       int64
	pending    bool // write seq is in flight
}

func (l *benchLoad) encode(sl *benchSlot) []byte {
	b := make([]byte, max(l.payload, 1+2*binary.MaxVarintLen64))
	b[0] = benchMagic
	n := 1 + binary.PutUvarint(b[1:], uint64(sl.id))
	binary.PutUvarint(b[n:], uint64(sl.seq))
	return b
}

func decodeBench(b []byte) (slot, seq int) {
	id, n := binary.Uvarint(b[1:])
	sq, _ := binary.Uvarint(b[1+n:])
	return int(id), int(sq)
}

// issue proposes sl's next write at its server, one link latency after the
// client sent it; a write that no server applies within the client timeout
// (its proposal was lost with a crashed leader) is sent again.
func (s *Sim) benchIssue(sl *benchSlot) {
	sl.seq++
	sl.call, sl.pending = s.clk.now, true
	seq := sl.seq
	data := s.load.encode(sl)
	var try func()
	try = func() {
		if sl.seq != seq || !sl.pending {
			return
		}
		sv := s.servers[sl.server]
		if !sv.up {
			sl.server = (sl.server + 1) % len(s.servers)
			s.clk.after(s.p.TickUS, try)
			return
		}
		s.besideLoop(sv, s.p.Cost.CPUPerClientWriteUS)
		s.onCore(s.p.Cost.LoadCPUPerWriteUS)
		sv.host.Propose(data, nil)
		s.kick(sv)
		s.clk.after(s.load.retryUS, func() {
			if sl.seq == seq && sl.pending {
				try()
			}
		})
	}
	s.clk.after(s.p.Cost.LinkLatencyUS, try)
}

// applied records a benchmark entry's application at sv: its first
// application anywhere is its commit; its application at the slot's server
// completes the slot's write.
func (l *benchLoad) applied(s *Sim, sv *server, e *replica.Committed) {
	if !l.seen[e.Zxid] {
		l.seen[e.Zxid] = true
		if s.clk.now >= l.from && s.clk.now < l.to {
			l.commits++
		}
		if l.commitHook != nil {
			l.commitHook(e.Zxid, s.clk.now)
		}
	}
	if l.applyHook != nil {
		l.applyHook(sv, e.Zxid, s.clk.now)
	}
	id, seq := decodeBench(e.Body)
	if id < 0 || id >= len(l.slots) {
		return
	}
	sl := l.slots[id]
	if !sl.pending || sl.seq != seq || sv.idx != sl.server {
		return
	}
	done := s.clk.now + s.p.Cost.LinkLatencyUS
	if sl.call >= l.from && done < l.to {
		l.lat = append(l.lat, done-sl.call)
	}
	sl.pending = false
	if !l.open {
		s.clk.after(s.p.Cost.LinkLatencyUS, func() { s.benchIssue(sl) })
	}
}

// benchParams are the fixed parameters of bench and failover runs: no
// faults, a constant link latency, the cost model's fsync.
func benchParams(o BenchOptions) Params {
	p := Params{Seed: o.Seed, Shape: o.Shape,
		TickUS: o.TickUS, HeartbeatTicks: o.HeartbeatTicks, ElectionTicks: o.ElectionTicks, DelayDist: "uniform",
		SnapEvery: 20_000, MaxBatch: o.MaxBatch, Cost: o.Cost, FsyncUS: o.Cost.FsyncUS}
	if p.MaxBatch <= 0 {
		p.MaxBatch = 256
	}
	if p.Classic {
		p.Trees, p.Children = 1, max(p.Nodes-1, 1)
	}
	if p.Trees <= 0 {
		p.Trees = 1
	}
	if p.Children <= 0 {
		p.Children = 3
	}
	return p
}

func (o *BenchOptions) defaults() {
	if o.Cost == (Cost{}) {
		o.Cost = CalibratedCost
	}
	if o.PayloadBytes <= 0 {
		o.PayloadBytes = 1024
	}
	if o.Outstanding <= 0 {
		o.Outstanding = 2000
	}
	if o.WarmupUS <= 0 {
		o.WarmupUS = 300_000
	}
	if o.MeasureUS <= 0 {
		o.MeasureUS = 1_000_000
	}
	if o.TickUS <= 0 {
		o.TickUS = 10_000
	}
	if o.HeartbeatTicks <= 0 {
		o.HeartbeatTicks = 5
	}
	if o.ElectionTicks <= 0 {
		o.ElectionTicks = 100
	}
	if o.RetryUS <= 0 {
		o.RetryUS = 2_000_000
	}
	if o.Sessions <= 0 {
		o.Sessions = 8
	}
	if o.AtLeader {
		o.Cost.CPUPerClientWriteUS = 0 // the broadcast alone: no clients to serve
	}
}

// newBenchSim builds a fault-free simulation and runs it until a leader
// has been elected and every group has a coordinator that follows it.
func newBenchSim(o BenchOptions) (*Sim, error) {
	p := benchParams(o)
	s := &Sim{p: p, rng: rand.New(rand.NewSource(p.Seed)), chk: newChecker()}
	s.chk.zxidOnly = true
	if err := s.setup(); err != nil {
		return nil, err
	}
	deadline := int64(10_000_000)
	for !s.settled() {
		if s.clk.now >= deadline || s.failed() {
			return nil, fmt.Errorf("no leader after %d virtual ms: %s", s.clk.now/1000, s.failMsg)
		}
		s.runUntil(s.clk.now + p.TickUS)
	}
	return s, nil
}

// leader returns the server that leads, or nil.
func (s *Sim) leader() *server {
	for _, sv := range s.servers {
		if sv.up && sv.host.Status().Leader {
			return sv
		}
	}
	return nil
}

// settled reports whether a leader exists, has committed an entry of its
// epoch, and every group has an up coordinator following that epoch.
func (s *Sim) settled() bool {
	l := s.leader()
	if l == nil {
		return false
	}
	hs := l.host.Status().HardState
	epoch := hs.Promised
	if hs.Commit.Epoch() != epoch {
		return false // the leader's own no-op has not committed yet
	}
	for g := range s.voters.Groups {
		ok := false
		for _, id := range s.voters.Groups[g] {
			sv := s.byID(gpaxos.ID(id))
			if sv.up {
				st := sv.host.Status()
				ok = ok || (st.Coordinator && st.HardState.Current == epoch)
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// startLoad starts the closed-loop workload with n slots, slot i writing
// through server serverOf(i) (by index), measuring from now+warmup for
// measure µs.
func (s *Sim) startLoad(n int, serverOf func(i int) int, payload int, warmup, measure, retry int64) {
	s.load = &benchLoad{payload: payload, retryUS: retry, from: s.clk.now + warmup, to: s.clk.now + warmup + measure,
		seen: map[gpaxos.Zxid]bool{}}
	for i := 0; i < n; i++ {
		sl := &benchSlot{id: i, server: serverOf(i)}
		s.load.slots = append(s.load.slots, sl)
		s.clk.after(int64(i)%1000, func() { s.benchIssue(sl) })
	}
}

// spread is startLoad's slot placement from server first on: slot i
// writes through server (first+i) mod N.
func (s *Sim) spread(first int) func(i int) int {
	return func(i int) int { return (first + i) % len(s.servers) }
}

// startOpenLoad starts the open-loop workload: writes arriving at rate
// per second, Poisson, until the measured window ends, each through one
// of sessions sessions drawn at random (session i at server i mod N),
// measuring from now+warmup for measure µs.
func (s *Sim) startOpenLoad(rate float64, sessions, payload int, warmup, measure, retry int64) {
	l := &benchLoad{open: true, payload: payload, retryUS: retry, from: s.clk.now + warmup, to: s.clk.now + warmup + measure,
		seen: map[gpaxos.Zxid]bool{}}
	s.load = l
	var arrive func()
	arrive = func() {
		if s.clk.now >= l.to {
			return
		}
		sl := &benchSlot{id: len(l.slots), server: s.rng.Intn(sessions) % len(s.servers)}
		l.slots = append(l.slots, sl)
		s.benchIssue(sl)
		s.clk.after(max(int64(s.rng.ExpFloat64()*1e6/rate), 1), arrive)
	}
	s.clk.after(0, arrive)
}

// RunBench runs one throughput benchmark.
func RunBench(o BenchOptions) (BenchResult, error) {
	o.defaults()
	s, err := newBenchSim(o)
	if err != nil {
		return BenchResult{}, err
	}
	switch {
	case o.AtLeader:
		leader := s.leader().idx
		s.startLoad(o.Outstanding, func(int) int { return leader }, o.PayloadBytes, o.WarmupUS, o.MeasureUS, o.RetryUS)
	case o.Rate > 0:
		s.startOpenLoad(o.Rate, o.Sessions, o.PayloadBytes, o.WarmupUS, o.MeasureUS, o.RetryUS)
	default:
		s.startLoad(o.Outstanding, s.spread(o.FirstServer), o.PayloadBytes, o.WarmupUS, o.MeasureUS, o.RetryUS)
	}
	s.runUntil(s.load.from)
	msgs0 := s.stats.msgs
	s.runUntil(s.load.to)
	if s.failed() {
		return BenchResult{}, fmt.Errorf("bench run failed: %s", s.failMsg)
	}
	r := BenchResult{Nodes: s.p.Nodes, Trees: s.p.Trees, Children: s.p.Children, Classic: s.p.Classic}
	if o.Classic {
		r.Trees, r.Children = 1, 0
	}
	secs := float64(o.MeasureUS) / 1e6
	r.ThroughputOps = float64(s.load.commits) / secs
	gl := s.leader()
	var leader, coords, acceptors []*server
	for _, sv := range s.servers {
		switch s.role(sv) {
		case "leader":
			leader = append(leader, sv)
		case "coordinator":
			coords = append(coords, sv)
		default:
			acceptors = append(acceptors, sv)
		}
	}
	r.Leader = roleTraffic(leader, s.load.commits)
	r.Coordinator = roleTraffic(coords, s.load.commits)
	r.Acceptor = roleTraffic(acceptors, s.load.commits)
	for _, sv := range s.servers {
		util := sv.windowCPUUS / float64(o.MeasureUS)
		if util > r.MaxCPUUtil {
			r.MaxCPUUtil, r.Busiest, r.BusiestRole = util, int(sv.id), s.role(sv)
		}
		if sv == gl && s.load.commits > 0 {
			r.GLCPUUtil = util
			r.GLCPUUSPerComm = sv.windowCPUUS / float64(s.load.commits)
		}
	}
	if s.load.commits > 0 {
		r.MsgsPerCommit = float64(s.stats.msgs-msgs0) / float64(s.load.commits)
	}
	if len(s.load.lat) > 0 {
		slices.Sort(s.load.lat)
		r.LatencyP50MS = float64(s.load.lat[len(s.load.lat)/2]) / 1000
		r.LatencyP99MS = float64(s.load.lat[len(s.load.lat)*99/100]) / 1000
	}
	return r, nil
}

// role names sv's role for reports.
func (s *Sim) role(sv *server) string {
	st := sv.host.Status()
	switch {
	case st.Leader:
		return "leader"
	case st.Coordinator:
		return "coordinator"
	}
	return "acceptor"
}
