package sim

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// FailoverOptions describe a failover measurement: a settled ensemble under
// a light write load loses its global leader (Kill "gl") or the coordinator
// of a group the leader does not coordinate (Kill "gc") to a crash.
type FailoverOptions struct {
	BenchOptions
	Kill string // "gl" or "gc"
}

// FailoverResult is what a failover run measured. A heartbeat timeout is
// the election timeout (ElectionTicks × tick): the silence after which a
// server suspects its coordinator or leader.
type FailoverResult struct {
	Nodes       int     `json:"nodes"`
	Trees       int     `json:"trees"`
	Children    int     `json:"children"`
	Classic     bool    `json:"classic"`
	Kill        string  `json:"kill"`
	Victim      int     `json:"victim"`
	TimeoutMS   float64 `json:"heartbeat_timeout_ms"`
	RecoveryMS  float64 `json:"recovery_ms"`
	Timeouts    float64 `json:"recovery_timeouts"`
	Description string  `json:"what"`
}

// RunFailover crashes the chosen server and measures, in virtual time:
// for "gl", the time until a write commits in a later epoch (a new leader
// is in place and the ensemble accepts new writes); for "gc", the time
// until another member of the victim's group coordinates it and follows
// the leader's epoch again (the group is back in the broadcast).
func RunFailover(o FailoverOptions) (FailoverResult, error) {
	if o.HeartbeatTicks == 0 && o.ElectionTicks == 0 {
		o.HeartbeatTicks, o.ElectionTicks = 2, 10
	}
	o.defaults()
	if o.Outstanding == 2000 {
		// A light load, well within what every configuration sustains:
		// failover, not throughput, is measured. Clients retry after 30 ms,
		// several times the write latency at this load.
		o.Outstanding = 16
	}
	o.RetryUS = 30_000
	s, err := newBenchSim(o.BenchOptions)
	if err != nil {
		return FailoverResult{}, err
	}
	s.startLoad(o.Outstanding, s.spread(o.FirstServer), o.PayloadBytes, 0, 1<<50, o.RetryUS)
	s.runUntil(s.clk.now + 300_000)
	gl := s.leader()
	if gl == nil || !s.settled() {
		return FailoverResult{}, fmt.Errorf("ensemble not settled before the crash")
	}
	timeout := s.p.TickUS * int64(s.p.ElectionTicks)
	r := FailoverResult{Nodes: s.p.Nodes, Trees: s.p.Trees, Children: s.p.Children, Classic: s.p.Classic, Kill: o.Kill,
		TimeoutMS: float64(timeout) / 1000}
	epoch := gl.host.Status().HardState.Promised
	var victim *server
	var done func() bool
	switch o.Kill {
	case "gl":
		victim = gl
		r.Description = "crash of the global leader until a write commits in a new epoch"
		var recovered bool
		s.load.commitHook = func(z gpaxos.Zxid, at int64) {
			if z.Epoch() > epoch {
				recovered = true
			}
		}
		done = func() bool { return recovered }
	case "gc":
		if s.p.Classic || len(s.voters.Groups) < 2 {
			return FailoverResult{}, fmt.Errorf("--kill gc needs a forest of at least two groups")
		}
		g := (gl.host.Status().Group + 1) % len(s.voters.Groups)
		for _, id := range s.voters.Groups[g] {
			if sv := s.byID(gpaxos.ID(id)); sv.host.Status().Coordinator {
				victim = sv
			}
		}
		if victim == nil {
			return FailoverResult{}, fmt.Errorf("group %d has no coordinator", g)
		}
		r.Description = fmt.Sprintf("crash of group %d's coordinator until another member coordinates it in the leader's epoch", g)
		done = func() bool {
			for _, id := range s.voters.Groups[g] {
				sv := s.byID(gpaxos.ID(id))
				if sv == victim || !sv.up {
					continue
				}
				st := sv.host.Status()
				if st.Coordinator && st.HardState.Current == st.HardState.Promised && st.HardState.Promised >= epoch {
					return true
				}
			}
			return false
		}
	default:
		return FailoverResult{}, fmt.Errorf("unknown --kill %q: want gl or gc", o.Kill)
	}
	r.Victim = int(victim.id)
	crashAt := s.clk.now
	s.crash(victim)
	limit := crashAt + 20*timeout
	for !done() {
		if s.failed() {
			return r, fmt.Errorf("run failed: %s", s.failMsg)
		}
		if s.clk.now >= limit {
			return r, fmt.Errorf("no recovery within %d heartbeat timeouts", 20)
		}
		s.runUntil(s.clk.now + 1_000)
	}
	r.RecoveryMS = float64(s.clk.now-crashAt) / 1000
	r.Timeouts = float64(s.clk.now-crashAt) / float64(timeout)
	return r, nil
}
