package sim

import (
	"fmt"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// DeliveryOptions describe a delivery measurement: a settled ensemble
// under a light write load loses Crash servers at once, nothing is
// repaired by hand, and the run follows which live servers stop applying
// new commits and for how long.
type DeliveryOptions struct {
	BenchOptions
	// Kill chooses the victims, one in each of Crash groups, starting with
	// the group after the leader's: "interior", the member that follows the
	// group's coordinator in the configuration (the coordinator's first
	// child in the group's tree, interior there when the group has more
	// than fan-out + 1 members); "coordinator", the group's coordinator
	// (never the leader).
	Kill  string
	Crash int
	// WindowUS is how long after the crash deliveries are followed
	// (default 10 election timeouts).
	WindowUS int64
}

// DeliveryResult is what a delivery run measured. A server's lag for an
// entry is the time from the entry's first application anywhere (its
// commit) to its application at that server; after the crash, every
// application counts, and a server that applied no entry committed after
// some point until the window's end counts that wait as its lag.
type DeliveryResult struct {
	Nodes    int    `json:"nodes"`
	Trees    int    `json:"trees"`
	Children int    `json:"children"`
	Kill     string `json:"kill"`
	Victims  []int  `json:"victims"`
	// BaselineLagP99MS is the 99th percentile of lags of the applications
	// in the 300 ms before the crash.
	BaselineLagP99MS float64 `json:"baseline_lag_p99_ms"`
	// StallMS is the lag above which a server counts as stalled (one
	// heartbeat interval).
	StallMS float64 `json:"stall_threshold_ms"`
	// Stalled lists the live servers whose lag exceeded StallMS for an
	// entry committed after the crash; StallMaxMS is the longest lag, and
	// StallMeanMS the mean over stalled servers of their longest lag.
	Stalled     []int   `json:"stalled"`
	StallMaxMS  float64 `json:"stall_max_ms"`
	StallMeanMS float64 `json:"stall_mean_ms"`
	// Commits counts entries committed in the window; CommitGapMS is the
	// longest time in it without a commit anywhere.
	Commits     int     `json:"commits"`
	CommitGapMS float64 `json:"commit_gap_ms"`
}

// RunDelivery crashes the chosen servers of a settled ensemble and
// measures how new commits reach the others.
func RunDelivery(o DeliveryOptions) (DeliveryResult, error) {
	if o.HeartbeatTicks == 0 && o.ElectionTicks == 0 {
		o.HeartbeatTicks, o.ElectionTicks = 2, 10
	}
	o.defaults()
	if o.Outstanding == 2000 {
		o.Outstanding = 16 // a light load, as in failover runs
	}
	o.RetryUS = 30_000
	if o.Crash < 1 {
		o.Crash = 1
	}
	s, err := newBenchSim(o.BenchOptions)
	if err != nil {
		return DeliveryResult{}, err
	}
	timeout := s.p.TickUS * int64(s.p.ElectionTicks)
	if o.WindowUS <= 0 {
		o.WindowUS = 10 * timeout
	}
	r := DeliveryResult{Nodes: s.p.Nodes, Trees: s.p.Trees, Children: s.p.Children, Kill: o.Kill,
		StallMS: float64(s.p.TickUS*int64(s.p.HeartbeatTicks)) / 1000}
	s.startLoad(o.Outstanding, s.spread(o.FirstServer), o.PayloadBytes, 0, 1<<50, o.RetryUS)
	s.runUntil(s.clk.now + 300_000)
	gl := s.leader()
	if gl == nil || !s.settled() {
		return r, fmt.Errorf("ensemble not settled before the crash")
	}
	victims, err := s.deliveryVictims(gl, o.Kill, o.Crash)
	if err != nil {
		return r, err
	}
	for _, v := range victims {
		r.Victims = append(r.Victims, int(v.id))
	}

	// Follow commits and applications: a baseline before the crash, then
	// the window after it.
	committedAt := map[gpaxos.Zxid]int64{}
	var commits []gpaxos.Zxid // in commit order
	var baseline []int64
	maxLag := make([]int64, len(s.servers))
	crashAt := s.clk.now + 300_000
	end := crashAt + o.WindowUS
	lastCommit := crashAt
	s.load.commitHook = func(z gpaxos.Zxid, at int64) {
		committedAt[z] = at
		if at >= crashAt {
			commits = append(commits, z)
			r.CommitGapMS = max(r.CommitGapMS, float64(at-lastCommit)/1000)
			lastCommit = at
		}
	}
	s.load.applyHook = func(sv *server, z gpaxos.Zxid, at int64) {
		c, ok := committedAt[z]
		switch {
		case !ok:
		case at < crashAt:
			baseline = append(baseline, at-c)
		default:
			// Entries committed just before the crash and applied after
			// it count too: the crash may be what held them up.
			maxLag[sv.idx] = max(maxLag[sv.idx], at-c)
		}
	}
	s.runUntil(crashAt)
	for _, v := range victims {
		s.crash(v)
	}
	s.runUntil(end)
	if s.failed() {
		return r, fmt.Errorf("run failed: %s", s.failMsg)
	}
	r.Commits = len(commits)
	r.CommitGapMS = max(r.CommitGapMS, float64(end-lastCommit)/1000)
	if len(baseline) > 0 {
		slices.Sort(baseline)
		r.BaselineLagP99MS = float64(baseline[len(baseline)*99/100]) / 1000
	}
	var sum float64
	for _, sv := range s.servers {
		if !sv.up {
			continue
		}
		lag := maxLag[sv.idx]
		applied := sv.host.Status().Applied
		for _, z := range commits {
			if z > applied {
				lag = max(lag, end-committedAt[z]) // still waiting for z
				break
			}
		}
		if ms := float64(lag) / 1000; ms > r.StallMS {
			r.Stalled = append(r.Stalled, int(sv.id))
			r.StallMaxMS = max(r.StallMaxMS, ms)
			sum += ms
		}
	}
	if len(r.Stalled) > 0 {
		r.StallMeanMS = sum / float64(len(r.Stalled))
	}
	return r, nil
}

// deliveryVictims picks the servers RunDelivery crashes.
func (s *Sim) deliveryVictims(gl *server, kill string, crash int) ([]*server, error) {
	t := len(s.voters.Groups)
	lg := gl.host.Status().Group
	var out []*server
	for i := 1; len(out) < crash && i <= t; i++ {
		g := (lg + i) % t
		members := s.voters.Groups[g]
		coord := -1
		for j, id := range members {
			if sv := s.byID(gpaxos.ID(id)); sv.up && sv.host.Status().Coordinator {
				coord = j
			}
		}
		if coord < 0 {
			return nil, fmt.Errorf("group %d has no coordinator", g)
		}
		switch kill {
		case "interior":
			if len(members) < 2 {
				continue
			}
			v := s.byID(gpaxos.ID(members[(coord+1)%len(members)]))
			if v == gl {
				continue
			}
			out = append(out, v)
		case "coordinator":
			if g != lg {
				out = append(out, s.byID(gpaxos.ID(members[coord])))
			}
		default:
			return nil, fmt.Errorf("unknown kill %q: want interior or coordinator", kill)
		}
	}
	if len(out) < crash {
		return nil, fmt.Errorf("only %d servers of kind %s to crash, want %d", len(out), kill, crash)
	}
	return out, nil
}
