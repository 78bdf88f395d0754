package sim

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// Options are what the caller of a simulation chooses.
type Options struct {
	Seed int64
	members.Shape
	Swarm bool // the seed also picks the fault mix
	// SafetyUS and LivenessUS are the lengths of the two phases in virtual
	// µs; zero picks the defaults.
	SafetyUS   int64
	LivenessUS int64
	Clients    int
	// MaxBatch bounds the entries of one append (and so, with it, the
	// size of catch-up messages); zero means 256. Small values exercise
	// paths that large ones rarely reach.
	MaxBatch int
	// Reconfig adds configuration changes to the fault mix (servers
	// removed, fresh spares added) in every run. In swarm mode the seed
	// also decides it, one run in two, unless NoReconfig.
	Reconfig bool
	// NoReconfig keeps configuration changes out of a swarm run: the
	// regression seeds found before swarm mode drew them replay their
	// original schedules.
	NoReconfig bool
	// Without lists fault kinds of the swarm's own stream (swarmKinds) a
	// swarm run never draws, so that a seed found before a kind existed
	// replays its original schedule, and disk faults (allDiskFaults) a
	// run never injects, so that the others can be studied apart.
	Without []string
	// DiskFaults makes every run draw storage faults at the restarts of
	// its safety phase (allDiskFaults; in swarm mode the seed picks
	// which). Without it, swarm mode draws them in one run in two, like
	// its other optional faults, and other runs never do.
	DiskFaults bool
	// Sessions adds the session layer (sessions.go: lock clients,
	// sessions, expiry, the serving guard) to every run; swarm mode also
	// draws it, one run in two, unless Without lists "sessions".
	Sessions bool
	// NoServingGuard lets every server serve whatever its proof of quorum
	// contact: the guard's absence, which the lock checker must catch.
	NoServingGuard bool
	// NoReconnectValidation lets a server take a reconnecting session
	// for alive on its own tree's word, without ordering its move: what
	// the lock checker must catch too.
	NoReconnectValidation bool
	// ExpiryInAnyEpoch lets an expiry take effect whatever epoch it
	// commits in (a deposed leader's expiry, handed on to the next
	// leader): what the lock checker must catch as well.
	ExpiryInAnyEpoch bool
	// ExpiryDespiteMove lets an expiry take effect after a move of its
	// session the leader had not applied when it decided it (the
	// reconnect's revalidation undone at once): what the lock checker
	// must catch too.
	ExpiryDespiteMove bool
	// LocalReads makes half of the register clients' reads local, as a
	// ZooKeeper server answers getData: from the server's own tree, not
	// through the log, checked to never show a client an older state than
	// one it has seen. Swarm mode also draws it, one run in two, unless
	// Without lists "localreads".
	LocalReads bool
	// NoReadWait lets a server answer a local read before it has applied
	// what the client has seen (ZooKeeper's lastZxidSeen rule left out):
	// what the read checker must catch.
	NoReadWait bool
	// Weak makes the last register a weak one (docs/namespaces.md): the
	// leader answers its writes once it has ordered them, from its
	// speculative state, through early replies (internal/replica's
	// early.go); the checker holds them to the weak guarantee (weak.go).
	// Swarm mode also draws it, one run in three, unless Without lists
	// "weak".
	Weak bool
	// WeakKeepConnection lets a server keep the connection of a client
	// whose write answered early was lost (server/replicated.go's abandon
	// left out): what the weak checker must catch.
	WeakKeepConnection bool
}

// Params are every parameter a run uses, chosen from the seed and printed
// first so a failing run can be understood and replayed.
type Params struct {
	Seed int64
	members.Shape
	Swarm                   bool
	TickUS                  int64
	HeartbeatTicks          int
	ElectionTicks           int
	DelayDist               string // uniform | exponential | bimodal
	DelayMinUS, DelayMeanUS int64
	DropProb                float64
	FsyncUS                 int64
	Faults                  []string // enabled kinds: crash pause partition loss delay
	FaultEveryUS            int64
	MaxDown                 int
	Partitions              []string // enabled partition kinds
	SnapEvery               int
	Clients                 int
	MaxBatch                int
	Keys                    int
	ClientTimeoutUS         int64
	SafetyUS, LivenessUS    int64
	Cost                    Cost
	// Reconfig enables configuration changes during the safety phase: a
	// server removed, or a spare added, every ReconfigEveryUS (±50%),
	// through the leader (Options.Reconfig). Its parameters come from a
	// stream of their own so that the other parameters of a seed stay what
	// they were before it existed.
	Reconfig        bool
	ReconfigEveryUS int64
	// Spares are servers beyond Nodes, down and outside the configuration
	// until a change adds them (with an empty disk, as a joining server
	// starts); ids Nodes+1 … Nodes+Spares.
	Spares int
	// Faults only swarm mode draws, each from the seed, from a stream of
	// their own (swarmKinds); zero values turn them off.
	//
	// DupProb is the probability that a message is delivered twice, the
	// copy after a delay of its own (so possibly first, or much later),
	// until the heal.
	DupProb float64
	// TickSkew is how far a server's tick period may be from TickUS, as a
	// fraction (0.2: ±20%); each server draws its own. With TickDrift the
	// period wanders within that bound from tick to tick instead of
	// staying fixed.
	TickSkew  float64
	TickDrift bool
	// StallProb is the probability that an fsync of the safety phase
	// stalls for StallMinUS to StallMaxUS (ending by the heal); the
	// server's loop goes on meanwhile, as during any fsync.
	StallProb              float64
	StallMinUS, StallMaxUS int64
	// SnapTransferUS is how long a message carrying a snapshot takes to
	// arrive, as a large tree's does on the transport's snapshot lane
	// while the peer's other messages go on beside it; zero: no longer
	// than any other. One snapshot at a time goes from a server to a
	// peer: another sent meanwhile is dropped, as the transport drops it.
	SnapTransferUS int64
	// DiskFaults are the storage faults a restart of the safety phase may
	// find (allDiskFaults), DiskFaultProb how likely one restart finds one
	// (Options.DiskFaults).
	DiskFaults    []string
	DiskFaultProb float64
	// Lockers are the session layer's lock clients (zero: no session
	// layer), each with sessions of SessionTimeoutUS, drawn from a stream
	// of their own (Options.Sessions). NoServingGuard,
	// NoReconnectValidation and ExpiryInAnyEpoch: Options'.
	Lockers               int
	SessionTimeoutUS      int64
	NoServingGuard        bool
	NoReconnectValidation bool
	ExpiryInAnyEpoch      bool
	ExpiryDespiteMove     bool
	// LocalReads and NoReadWait: Options'.
	LocalReads, NoReadWait bool
	// WeakKeys are the registers, the last of the Keys, that are weak
	// (Options.Weak); zero: none. WeakKeepConnection: Options'.
	WeakKeys           int
	WeakKeepConnection bool
}

// Cost is the simulator's cost model. Every server is a single queue: it
// processes one batch of received messages at a time, paying CPU time per
// message and per byte received and sent, per entry it writes to its log
// (and later applies) and per fsync, then waits for its fsync. The
// server a client writes through also pays for handling the request, and
// every server pays a fixed rate for its timers and runtime.
type Cost struct {
	CPUPerMsgUS   float64 `json:"cpu_per_msg_us"`         // per message sent, and received unless CPUPerRecvMsgUS
	CPUPerByteUS  float64 `json:"cpu_per_byte_us"`        // per byte received or sent
	BandwidthBpUS float64 `json:"bandwidth_bytes_per_us"` // a server's network egress, bytes per µs; 0 = infinite
	LinkLatencyUS int64   `json:"link_latency_us"`        // added to every remote message
	FsyncUS       int64   `json:"fsync_us"`               // one fsync of a Ready (bench runs; fault runs draw their own)
	// CPUPerRecvMsgUS, when positive, is the CPU time per message received
	// instead of CPUPerMsgUS: a receiver is woken for what it reads, which
	// costs a real server more than a send.
	CPUPerRecvMsgUS float64 `json:"cpu_per_recv_msg_us,omitempty"`
	// FsyncCPUUS is the CPU time of one fsync: the system call and the
	// hand-off to and from the storage goroutine.
	FsyncCPUUS float64 `json:"fsync_cpu_us,omitempty"`
	// CPUPerEntryUS is the CPU time of one entry written to the log and
	// applied to the data tree.
	CPUPerEntryUS float64 `json:"cpu_per_entry_us,omitempty"`
	// CPUPerClientWriteUS is the CPU time of one client write at the
	// server the client is connected to: reading and decoding the
	// request, proposing it, encoding and writing the reply.
	CPUPerClientWriteUS float64 `json:"cpu_per_client_write_us,omitempty"`
	// IdleCPUUSPerSec is what a server spends per second whatever its
	// load: its ticker, timers and the Go runtime's background work.
	IdleCPUUSPerSec float64 `json:"idle_cpu_us_per_sec,omitempty"`
	// SelfMsgsFree: a message a server sends itself (a leader to its own
	// group, say) costs no CPU, as the real transport hands it over in
	// memory. The fault runs' model leaves it false, so that the seeds
	// they pinned replay as they were found.
	SelfMsgsFree bool `json:"self_msgs_free,omitempty"`
	// SharedCores, when positive, puts every server on one machine of that
	// many cores, as the real runs the model is checked against are: a
	// server's work waits for a free core, first come first served, and
	// the load generator takes LoadCPUPerWriteUS of a core per write. 0
	// gives every server a core of its own.
	SharedCores       int     `json:"shared_cores,omitempty"`
	LoadCPUPerWriteUS float64 `json:"load_cpu_per_write_us,omitempty"`
}

func (p Params) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed=%d nodes=%d trees=%d children=%d classic=%v swarm=%v\n", p.Seed, p.Nodes, p.Trees, p.Children, p.Classic, p.Swarm)
	fmt.Fprintf(&b, "tick_us=%d heartbeat_ticks=%d election_ticks=%d fsync_us=%d snap_every=%d max_batch=%d\n", p.TickUS, p.HeartbeatTicks, p.ElectionTicks, p.FsyncUS, p.SnapEvery, p.MaxBatch)
	fmt.Fprintf(&b, "delay=%s min_us=%d mean_us=%d drop=%.3f\n", p.DelayDist, p.DelayMinUS, p.DelayMeanUS, p.DropProb)
	fmt.Fprintf(&b, "faults=%v every_us=%d max_down=%d partitions=%v\n", p.Faults, p.FaultEveryUS, p.MaxDown, p.Partitions)
	fmt.Fprintf(&b, "clients=%d keys=%d client_timeout_us=%d safety_us=%d liveness_us=%d\n", p.Clients, p.Keys, p.ClientTimeoutUS, p.SafetyUS, p.LivenessUS)
	fmt.Fprintf(&b, "reconfig=%v every_us=%d spares=%d\n", p.Reconfig, p.ReconfigEveryUS, p.Spares)
	fmt.Fprintf(&b, "duplicate=%.3f tick_skew=%.2f tick_drift=%v fsync_stall=%.4f stall_us=%d-%d snap_transfer_us=%d\n", p.DupProb, p.TickSkew, p.TickDrift, p.StallProb, p.StallMinUS, p.StallMaxUS, p.SnapTransferUS)
	fmt.Fprintf(&b, "disk_faults=%v disk_fault_prob=%.2f\n", p.DiskFaults, p.DiskFaultProb)
	fmt.Fprintf(&b, "lockers=%d session_timeout_us=%d no_serving_guard=%v no_reconnect_validation=%v expiry_in_any_epoch=%v expiry_despite_move=%v\n", p.Lockers, p.SessionTimeoutUS, p.NoServingGuard, p.NoReconnectValidation, p.ExpiryInAnyEpoch, p.ExpiryDespiteMove)
	fmt.Fprintf(&b, "local_reads=%v no_read_wait=%v weak_keys=%d weak_keep_connection=%v\n", p.LocalReads, p.NoReadWait, p.WeakKeys, p.WeakKeepConnection)
	fmt.Fprintf(&b, "cost: cpu_per_msg_us=%.2f cpu_per_byte_us=%.4f bandwidth_bpus=%.1f link_latency_us=%d", p.Cost.CPUPerMsgUS, p.Cost.CPUPerByteUS, p.Cost.BandwidthBpUS, p.Cost.LinkLatencyUS)
	return b.String()
}

var allFaults = []string{"crash", "pause", "partition", "loss", "delay"}
var allPartitions = []string{"symmetric", "asymmetric", "isolate", "groups"}

// ChooseParams derives every parameter of a run from o.
func ChooseParams(o Options) Params {
	r := rand.New(rand.NewSource(o.Seed ^ 0x5eed))
	p := Params{Seed: o.Seed, Shape: o.Shape, Swarm: o.Swarm,
		TickUS: 10_000, HeartbeatTicks: 2, ElectionTicks: 10, SafetyUS: o.SafetyUS, LivenessUS: o.LivenessUS,
		Clients: o.Clients, MaxBatch: o.MaxBatch}
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
	if p.SafetyUS == 0 {
		p.SafetyUS = 4_000_000
	}
	if p.LivenessUS == 0 {
		p.LivenessUS = 4_000_000
	}
	if p.Clients == 0 {
		p.Clients = 2 + r.Intn(4)
	}
	p.Keys = 1 + r.Intn(3)
	p.ClientTimeoutUS = 300_000
	p.DelayDist = []string{"uniform", "exponential", "bimodal"}[r.Intn(3)]
	p.DelayMinUS = 50 + int64(r.Intn(200))
	p.DelayMeanUS = p.DelayMinUS + int64(r.Intn(2000))
	p.FsyncUS = 100 + int64(r.Intn(2000))
	p.SnapEvery = 20 + r.Intn(100)
	p.FaultEveryUS = 50_000 + int64(r.Intn(300_000))
	p.MaxDown = 1 + r.Intn(max(p.Nodes/2, 1))
	if p.Swarm {
		for _, f := range allFaults {
			if r.Intn(2) == 0 {
				p.Faults = append(p.Faults, f)
			}
		}
		for _, k := range allPartitions {
			if r.Intn(2) == 0 {
				p.Partitions = append(p.Partitions, k)
			}
		}
	} else {
		p.Faults = append([]string(nil), allFaults...)
		p.Partitions = append([]string(nil), allPartitions...)
	}
	if len(p.Partitions) == 0 {
		p.Partitions = []string{"isolate"}
	}
	if p.has("loss") {
		p.DropProb = float64(r.Intn(100)) / 1000
	}
	p.Cost = Cost{CPUPerMsgUS: 2, CPUPerByteUS: 0.002}
	rr := rand.New(rand.NewSource(o.Seed ^ 0xc0f16))
	p.Reconfig = o.Reconfig || p.Swarm && !o.NoReconfig && rr.Intn(2) == 0
	p.ReconfigEveryUS = 100_000 + int64(rr.Intn(400_000))
	if p.Reconfig {
		p.Spares = 1 + rr.Intn(3)
	}
	if p.Swarm {
		p.drawSwarmKinds(rand.New(rand.NewSource(o.Seed^0xfa175)), o.Without)
	}
	p.drawDiskFaults(rand.New(rand.NewSource(o.Seed^0xd15c)), o)
	sr := rand.New(rand.NewSource(o.Seed ^ 0x5e55))
	lockers, timeout := 2+sr.Intn(3), 300_000+sr.Int63n(1_200_000)
	if o.Sessions || p.Swarm && sr.Intn(2) == 0 && !slices.Contains(o.Without, "sessions") {
		p.Lockers, p.SessionTimeoutUS = lockers, timeout
		p.NoServingGuard, p.NoReconnectValidation, p.ExpiryInAnyEpoch = o.NoServingGuard, o.NoReconnectValidation, o.ExpiryInAnyEpoch
		p.ExpiryDespiteMove = o.ExpiryDespiteMove
	}
	lr := rand.New(rand.NewSource(o.Seed ^ 0x10ca1))
	if o.LocalReads || p.Swarm && lr.Intn(2) == 0 && !slices.Contains(o.Without, "localreads") {
		p.LocalReads, p.NoReadWait = true, o.NoReadWait
	}
	wr := rand.New(rand.NewSource(o.Seed ^ 0x3eac))
	if o.Weak || p.Swarm && p.Keys > 1 && wr.Intn(3) == 0 && !slices.Contains(o.Without, "weak") {
		p.WeakKeys, p.WeakKeepConnection = 1, o.WeakKeepConnection
	}
	if len(p.DiskFaults) > 0 && !p.has("crash") {
		p.Faults = append(p.Faults, "crash") // disk faults are found at restarts
	}
	return p
}

// swarmDrawsDiskFaults says whether swarm mode draws disk faults without
// Options.DiskFaults, one run in two.
const swarmDrawsDiskFaults = true

// drawDiskFaults draws the disk faults, from a stream of their own: every
// kind in a run that is not swarm, a subset in one that is.
func (p *Params) drawDiskFaults(r *rand.Rand, o Options) {
	drawn := r.Intn(2) == 0
	var kinds []string
	for _, k := range allDiskFaults {
		if r.Intn(2) == 0 {
			kinds = append(kinds, k)
		}
	}
	one, prob := allDiskFaults[r.Intn(len(allDiskFaults))], 0.2+0.6*r.Float64()
	if !o.DiskFaults && !(p.Swarm && swarmDrawsDiskFaults && drawn && !slices.Contains(o.Without, "disk")) {
		return
	}
	switch {
	case !p.Swarm:
		kinds = allDiskFaults
	case len(kinds) == 0:
		kinds = []string{one}
	}
	for _, k := range kinds {
		if !slices.Contains(o.Without, k) {
			p.DiskFaults = append(p.DiskFaults, k)
		}
	}
	if len(p.DiskFaults) > 0 {
		p.DiskFaultProb = prob
	}
}

// swarmKinds are the fault kinds only swarm mode draws, each from a stream
// of its own, so that drawing them leaves the parameters above as they
// were: messages duplicated, tick periods skewed, fsyncs stalled,
// snapshots slow to send.
var swarmKinds = []string{"duplicate", "skew", "stall", "bigsnap"}

// drawSwarmKinds draws whether each of swarmKinds is on, and how much, one
// run in two each; every draw is made whatever is chosen or excluded, so a
// kind's parameters do not depend on the others'.
func (p *Params) drawSwarmKinds(r *rand.Rand, without []string) {
	on := func(kind string) bool { return r.Intn(2) == 0 && !slices.Contains(without, kind) }
	dup, dupProb := on("duplicate"), 0.01+0.14*r.Float64()
	skew, tickSkew, drift := on("skew"), 0.02+0.18*r.Float64(), r.Intn(2) == 0
	stall, stallProb := on("stall"), 0.0005+0.0045*r.Float64()
	bigsnap, snapUS := on("bigsnap"), 20_000+r.Int63n(600_000)
	if dup {
		p.DupProb = dupProb
	}
	if skew {
		p.TickSkew, p.TickDrift = tickSkew, drift
	}
	if stall {
		p.StallProb, p.StallMinUS, p.StallMaxUS = stallProb, 500_000, 5_000_000
	}
	if bigsnap {
		// A server may need snapshots one after the other (its
		// coordinator's first, then its own): the liveness phase leaves
		// time for a few.
		p.SnapTransferUS = snapUS
		p.LivenessUS += 4 * snapUS
	}
}

func (p Params) has(fault string) bool {
	for _, f := range p.Faults {
		if f == fault {
			return true
		}
	}
	return false
}
