package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"runtime/debug"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// FailKind classifies a failed run; each has its own exit code.
type FailKind int

const (
	failNone        FailKind = iota
	failCorrectness          // a checker found a safety violation
	failLiveness             // the healed cluster did not converge in time
	failCrash                // the code under test panicked or errored
	failUndecided            // the linearizability check could not decide
)

// Exit codes of `giraffe-lab sim`, one per kind of failure.
const (
	ExitOK          = 0
	ExitCorrectness = 2
	ExitLiveness    = 3
	ExitCrash       = 4
	ExitUndecided   = 5
)

// Sim is one simulation run.
type Sim struct {
	p      Params
	voters quorum.Config
	clk    clock
	rng    *rand.Rand
	// xrng draws the swarm-only faults (Params.DupProb, TickSkew,
	// StallProb), so that a run without them draws from rng what it
	// always did.
	xrng *rand.Rand
	// drng draws the disk faults (Params.DiskFaults) likewise.
	drng    *rand.Rand
	net     *network
	servers []*server
	spares  []*server // Params.Spares servers a configuration change may add
	clients []*client
	history []*histOp
	chk     *checker
	stats   stats
	log     io.Writer  // fault log; nil for quiet
	load    *benchLoad // the benchmark workload, in bench and failover runs
	// coresFree is when each of the machine's shared cores is next free
	// (Cost.SharedCores).
	coresFree []float64
	// lockers are the session layer's lock clients (sessions.go), lrng
	// their draws, nextSession the last session id given out.
	lockers     []*locker
	lrng        *rand.Rand
	nextSession int64

	healAt int64
	// probing: the liveness phase waits for every server's probe.
	probing       bool
	stopClientsAt int64
	failKind      FailKind
	failMsg       string
}

type stats struct {
	msgs     int
	commits  int
	postHeal int
	commitTS map[gpaxos.Zxid]int64
	// unknownCommitted counts the timed-out operations the committed
	// sequence shows took effect.
	unknownCommitted int
	// lockAcquires counts the lock's acquisitions, sessionsExpired the
	// expiries leaders proposed (sessions.go).
	lockAcquires, sessionsExpired int
	// localReads counts the local reads served (client.go).
	localReads int
	// weakAcks counts the early replies clients were given, weakLost
	// those whose writes did not commit (weak.go).
	weakAcks, weakLost int
}

// commitAt counts an entry's first application anywhere as its commit.
func (st *stats) commitAt(s *Sim, z gpaxos.Zxid) {
	if st.commitTS == nil {
		st.commitTS = map[gpaxos.Zxid]int64{}
	}
	if _, ok := st.commitTS[z]; !ok {
		st.commitTS[z] = s.clk.now
		st.commits++
	}
}

// Result summarizes a run.
type Result struct {
	Seed       int64  `json:"seed"`
	OK         bool   `json:"ok"`
	Failure    string `json:"failure,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Commits    int    `json:"commits"`
	Ops        int    `json:"ops"`
	OpsOK      int    `json:"ops_ok"`
	OpsUnknown int    `json:"ops_unknown"`
	// UnknownCommitted of the OpsUnknown took effect (their entries
	// committed); the others did not.
	UnknownCommitted int `json:"unknown_committed"`
	// LockAcquires and SessionsExpired count the session layer's lock
	// acquisitions and session expiries (zero without lockers).
	LockAcquires    int `json:"lock_acquires"`
	SessionsExpired int `json:"sessions_expired"`
	// LocalReads counts the local reads servers answered (zero unless
	// the run has them).
	LocalReads int `json:"local_reads"`
	// WeakAcks counts the writes to weak registers clients were told
	// succeeded before they committed, WeakLost those of them that never
	// committed (zero unless the run has weak registers).
	WeakAcks     int    `json:"weak_acks"`
	WeakLost     int    `json:"weak_lost"`
	Messages     int    `json:"messages"`
	ConfChanges  int    `json:"conf_changes"`
	Linearizable string `json:"linearizable"`
	VirtualMS    int64  `json:"virtual_ms"`
	exit         int
	history      []*histOp
}

// ExitCode is the process exit status for r.
func (r Result) ExitCode() int { return r.exit }

func (s *Sim) fail(k FailKind, format string, args ...any) {
	if s.failKind != failNone {
		return
	}
	s.failKind, s.failMsg = k, fmt.Sprintf("t=%dus: ", s.clk.now)+fmt.Sprintf(format, args...)
}

func (s *Sim) failed() bool { return s.failKind != failNone }

func (s *Sim) note(format string, args ...any) {
	if s.log != nil {
		fmt.Fprintf(s.log, "%10d us  %s\n", s.clk.now, fmt.Sprintf(format, args...))
	}
}

// Run executes one simulation: the parameters are printed to out first,
// then faults as they are injected when verbose.
func Run(o Options, out io.Writer, verbose bool) (res Result) {
	p := ChooseParams(o)
	if out != nil {
		fmt.Fprintln(out, p)
	}
	s := &Sim{p: p, rng: rand.New(rand.NewSource(p.Seed)), xrng: rand.New(rand.NewSource(p.Seed ^ 0x5ca1e)),
		drng: rand.New(rand.NewSource(p.Seed ^ 0xd15c0)), lrng: rand.New(rand.NewSource(p.Seed ^ 0x10c4)),
		nextSession: 1 << 40, chk: newChecker()}
	if verbose {
		s.log = out
	}
	defer func() {
		if r := recover(); r != nil {
			s.failKind, s.failMsg = failCrash, fmt.Sprintf("panic at t=%dus: %v\n%s", s.clk.now, r, debug.Stack())
			res = s.result("")
		}
	}()
	if err := s.setup(); err != nil {
		s.fail(failCrash, "setup: %v", err)
		return s.result("")
	}
	s.healAt = p.SafetyUS
	s.stopClientsAt = p.SafetyUS + p.LivenessUS/2
	s.startClients()
	s.startLockers()
	s.faultLoop()
	if p.Reconfig {
		s.reconfigLoop(rand.New(rand.NewSource(p.Seed ^ 0x7ec0)))
	}
	s.runUntil(p.SafetyUS)
	s.heal()
	s.runUntil(s.stopClientsAt)
	s.converge(p.SafetyUS + p.LivenessUS)
	lin := "skipped"
	if !s.failed() {
		s.checkDurability()
		s.checkWeak()
	}
	if !s.failed() {
		lin = s.checkLinearizable()
	}
	return s.result(lin)
}

func (s *Sim) setup() error {
	v, err := voters(s.p)
	if err != nil {
		return err
	}
	s.voters = v
	s.net = newNetwork(s.p, func() int64 { return s.clk.now })
	for i := 0; i < s.p.Nodes; i++ {
		sv := &server{id: gpaxos.ID(i + 1), idx: i, rng: rand.New(rand.NewSource(s.p.Seed*1_000_003 + int64(i)))}
		sv.skew = s.drawSkew()
		s.servers = append(s.servers, sv)
		if err := s.start(sv); err != nil {
			return err
		}
	}
	for _, sv := range s.servers {
		sv := sv
		s.clk.after(s.rng.Int63n(s.p.TickUS), func() { s.tickLoop(sv) })
	}
	for i := 0; i < s.p.Spares; i++ {
		idx := s.p.Nodes + i
		s.spares = append(s.spares, &server{id: gpaxos.ID(idx + 1), idx: idx,
			rng: rand.New(rand.NewSource(s.p.Seed*1_000_003 + int64(idx))), skew: s.drawSkew()})
	}
	return nil
}

// drawSkew draws one server's tick skew, uniform in ±TickSkew.
func (s *Sim) drawSkew() float64 {
	if s.p.TickSkew == 0 {
		return 0
	}
	return (2*s.xrng.Float64() - 1) * s.p.TickSkew
}

func (s *Sim) runUntil(t int64) {
	for !s.failed() && s.clk.step(t) {
	}
	if s.clk.now < t {
		s.clk.now = t
	}
}

// heal ends the safety phase: the network is repaired and every server is
// up and running.
func (s *Sim) heal() {
	if s.failed() {
		return
	}
	s.note("heal: liveness phase")
	s.net.heal()
	s.net.drop, s.net.dup, s.net.slowUntil = 0, 0, 0
	for _, sv := range s.servers {
		if !sv.up {
			s.restart(sv)
		}
		s.unpause(sv)
	}
	s.probing = true
	for _, sv := range s.members() {
		s.probe(sv)
	}
}

// probeMagic starts the body of a probe: an entry every server proposes
// once the network heals, which must commit (converged), so that a server
// whose own proposals can no longer commit fails the run even when no
// client happens to use it. The tree ignores it.
const probeMagic byte = 0xfe

func isProbe(b []byte) bool { return len(b) > 0 && b[0] == probeMagic }

// probe has sv propose a probe, unless one is on its way or committed.
func (s *Sim) probe(sv *server) {
	if sv.up && sv.host != nil && !sv.probed && !sv.probeSent {
		sv.probeSent = true
		sv.host.Propose([]byte{probeMagic, byte(sv.id)}, nil)
		s.kick(sv)
	}
}

// converge runs until every server has applied the whole committed sequence
// and some write issued after the heal has completed, or fails for liveness
// at the deadline.
func (s *Sim) converge(deadline int64) {
	for !s.failed() {
		if s.converged() {
			return
		}
		if s.clk.now >= deadline {
			break
		}
		s.runUntil(min(s.clk.now+s.p.TickUS, deadline))
	}
	if !s.failed() {
		var detail string
		for _, sv := range s.members() {
			if sv.host == nil {
				detail += fmt.Sprintf("\n  server %d: down", sv.id)
				continue
			}
			st := sv.host.Status()
			detail += fmt.Sprintf("\n  server %d: pos=%d probed=%v %+v groups=%v up=%v", sv.id, sv.pos, sv.probed, st, sv.host.Voters().Groups, sv.up)
		}
		s.fail(failLiveness, "liveness: not converged (canonical length %d, post-heal ops %d)%s", len(s.chk.canon), s.stats.postHeal, detail)
	}
}

func (s *Sim) converged() bool {
	if s.stats.postHeal == 0 || len(s.chk.canon) == 0 {
		return false
	}
	leader := false
	last := s.chk.canon[len(s.chk.canon)-1].zxid
	for _, sv := range s.members() {
		if !s.voting(sv) {
			continue // a learner the configuration left out
		}
		if !sv.probed {
			s.probe(sv) // a spare started since the heal
			return false
		}
		if !sv.up || sv.pos != len(s.chk.canon)-1 {
			return false
		}
		st := sv.host.Status()
		if st.HardState.Commit != last {
			return false
		}
		leader = leader || st.Leader
	}
	return leader
}

func (s *Sim) result(lin string) Result {
	r := Result{Seed: s.p.Seed, OK: !s.failed(), Failure: s.failMsg, Commits: s.stats.commits,
		Messages: s.stats.msgs, ConfChanges: s.chk.confChanges, Linearizable: lin, VirtualMS: s.clk.now / 1000, history: s.history,
		UnknownCommitted: s.stats.unknownCommitted, LockAcquires: s.stats.lockAcquires, SessionsExpired: s.stats.sessionsExpired,
		LocalReads: s.stats.localReads, WeakAcks: s.stats.weakAcks, WeakLost: s.stats.weakLost}
	for _, h := range s.history {
		r.Ops++
		if h.Done {
			r.OpsOK++
		} else {
			r.OpsUnknown++
		}
	}
	switch s.failKind {
	case failCorrectness:
		r.Kind, r.exit = "correctness", ExitCorrectness
	case failLiveness:
		r.Kind, r.exit = "liveness", ExitLiveness
	case failCrash:
		r.Kind, r.exit = "crash", ExitCrash
	case failUndecided:
		r.Kind, r.exit = "undecided", ExitUndecided
	}
	return r
}

// historyLine is one line of the exported history.
type historyLine struct {
	Client int    `json:"client"`
	Op     string `json:"op"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	// Expect is the version a cas expects.
	Expect int32  `json:"expect"`
	Call   int64  `json:"call"`
	Return *int64 `json:"return"`
	OK     *bool  `json:"ok"`
	Result string `json:"result"`
	// Version is the znode version the answer reported (see histOp).
	Version *int32 `json:"version"`
}

// WriteHistory writes r's client history as JSON lines: virtual µs;
// return, ok and version null when the outcome is unknown.
func (r Result) WriteHistory(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, h := range r.history {
		l := historyLine{Client: h.Client, Op: h.Op, Key: h.Key, Value: h.Value, Expect: h.Expect, Call: h.Call, Result: h.Result}
		if h.Done {
			ret, ok, v := h.Return, h.OK, h.Version
			l.Return, l.OK, l.Version = &ret, &ok, &v
		}
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}
