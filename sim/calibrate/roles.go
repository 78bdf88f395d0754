package calibrate

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/sim"
)

// RoleRun is what one server of a real ensemble did in one measured window
// of scripts/bench-roles.sh: its role, its CPU time, and the work the cost
// model charges for.
type RoleRun struct {
	Shape string  `json:"shape"` // "classic-N" or "forest-N-T-C"
	Rate  float64 `json:"rate"`  // the open-loop load, writes per second
	ID    int     `json:"id"`
	Role  string  `json:"role"` // leader, coordinator or acceptor
	// Seconds is the window's length; Writes the client writes the whole
	// ensemble received in it.
	Seconds float64 `json:"seconds"`
	Writes  float64 `json:"writes"`
	// CPUUS is the server process's user and system time in the window.
	CPUUS float64 `json:"cpu_us"`
	// Fsyncs and FsyncSeconds: its log's fsyncs and their total time;
	// Persisted the entries they made durable.
	Fsyncs       float64 `json:"fsyncs"`
	FsyncSeconds float64 `json:"fsync_seconds"`
	Persisted    float64 `json:"persisted"`
	// ClientWrites are the writes its own clients sent it.
	ClientWrites float64 `json:"client_writes"`
	// Peer messages and their bytes, sent and received.
	MsgsSent  float64 `json:"msgs_sent"`
	MsgsRecv  float64 `json:"msgs_recv"`
	BytesSent float64 `json:"bytes_sent"`
	BytesRecv float64 `json:"bytes_recv"`
	// ClientCPUUS is the load generator's CPU time in the window, and
	// Cores the machine's cores, which it and every server shared.
	ClientCPUUS float64 `json:"client_cpu_us"`
	Cores       int     `json:"cores"`
}

// ReadRoleRuns reads scripts/bench-roles.sh's output, one JSON object per
// line.
func ReadRoleRuns(r io.Reader) ([]RoleRun, error) {
	var runs []RoleRun
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var run RoleRun
		if err := json.Unmarshal(sc.Bytes(), &run); err != nil {
			return nil, fmt.Errorf("line %d: %w", len(runs)+1, err)
		}
		if run.Writes <= 0 || run.Seconds <= 0 {
			return nil, fmt.Errorf("line %d: no writes measured", len(runs)+1)
		}
		runs = append(runs, run)
	}
	return runs, sc.Err()
}

// roleTerms are the cost model's CPU terms, in the order of the fit's
// columns: what one server did that each costs it.
var roleTerms = []struct {
	count func(RoleRun) float64
	set   func(*sim.Cost, float64)
}{
	{func(r RoleRun) float64 { return r.Seconds }, func(c *sim.Cost, v float64) { c.IdleCPUUSPerSec = v }},
	{func(r RoleRun) float64 { return r.Fsyncs }, func(c *sim.Cost, v float64) { c.FsyncCPUUS = v }},
	{func(r RoleRun) float64 { return r.ClientWrites }, func(c *sim.Cost, v float64) { c.CPUPerClientWriteUS = v }},
	{func(r RoleRun) float64 { return r.MsgsSent }, func(c *sim.Cost, v float64) { c.CPUPerMsgUS = v }},
	{func(r RoleRun) float64 { return r.MsgsRecv }, func(c *sim.Cost, v float64) { c.CPUPerRecvMsgUS = v }},
}

// FitRoles fits the cost model's CPU terms to real servers' CPU time: the
// least-squares solution of CPU = sum of term x count over every server
// of every run, with no term negative (a term the unconstrained fit makes
// negative is left out, 0, and the rest fitted again). The costs per byte
// and per entry stay base's, measured in process (Run, EntryCPUUS): in
// these runs every server writes and applies every entry, and every
// message's bytes grow with the entries it carries, so the fit cannot
// tell them from the writes' other costs, while an ensemble at saturation
// sends its entries in few large messages, where they are most of the
// cost. Bandwidth, link latency and fsync latency are not CPU and stay
// base's.
func FitRoles(runs []RoleRun, base sim.Cost) (sim.Cost, error) {
	if len(runs) < 2*len(roleTerms) {
		return base, fmt.Errorf("%d server measurements cannot fit %d terms", len(runs), len(roleTerms))
	}
	use := make([]int, len(roleTerms))
	for i := range use {
		use[i] = i
	}
	for len(use) > 0 {
		x, err := leastSquares(runs, use, base)
		if err != nil {
			return base, err
		}
		worst := -1
		for i, v := range x {
			if v < 0 && (worst < 0 || v < x[worst]) {
				worst = i
			}
		}
		if worst < 0 {
			// The real counters leave a server's messages to itself out,
			// and the transport hands them over in memory.
			c := base
			c.SelfMsgsFree = true
			for _, t := range roleTerms {
				t.set(&c, 0)
			}
			for i, k := range use {
				roleTerms[k].set(&c, x[i])
			}
			return c, nil
		}
		use = append(use[:worst], use[worst+1:]...)
	}
	return base, errors.New("no term fits with a non-negative cost")
}

// leastSquares solves for the terms in use, less what fixed's costs per
// byte and per entry account for, each column scaled to its
// largest count so that seconds and bytes are equally conditioned.
func leastSquares(runs []RoleRun, use []int, fixed sim.Cost) ([]float64, error) {
	a := mat.NewDense(len(runs), len(use), nil)
	b := mat.NewVecDense(len(runs), nil)
	scale := make([]float64, len(use))
	for j, k := range use {
		for _, r := range runs {
			scale[j] = math.Max(scale[j], math.Abs(roleTerms[k].count(r)))
		}
		if scale[j] == 0 {
			scale[j] = 1
		}
	}
	for i, r := range runs {
		for j, k := range use {
			a.Set(i, j, roleTerms[k].count(r)/scale[j])
		}
		b.SetVec(i, r.CPUUS-fixed.CPUPerByteUS*(r.BytesSent+r.BytesRecv)-fixed.CPUPerEntryUS*r.Persisted)
	}
	var x mat.VecDense
	if err := x.SolveVec(a, b); err != nil {
		return nil, fmt.Errorf("fitting the cost model: %w", err)
	}
	out := make([]float64, len(use))
	for j := range use {
		out[j] = x.AtVec(j) / scale[j]
	}
	return out, nil
}

// RoleCheck compares, for one shape, load and role, the real servers' CPU
// time per write with the simulator's prediction, and the work behind it.
type RoleCheck struct {
	Shape string  `json:"shape"`
	Rate  float64 `json:"rate"`
	Role  string  `json:"role"`
	// Servers is how many real servers had the role.
	Servers int `json:"servers"`
	// RealCPUUS and SimCPUUS are one server's CPU µs per write (the mean
	// over the servers of the role); Error is SimCPUUS/RealCPUUS - 1.
	RealCPUUS float64 `json:"real_cpu_us"`
	SimCPUUS  float64 `json:"sim_cpu_us"`
	Error     float64 `json:"error"`
	// Fsyncs and peer messages (sent and received) per write, real and
	// simulated.
	RealFsyncs float64 `json:"real_fsyncs"`
	SimFsyncs  float64 `json:"sim_fsyncs"`
	RealMsgs   float64 `json:"real_msgs"`
	SimMsgs    float64 `json:"sim_msgs"`
	// FsyncUS is the real servers' mean fsync time, which the simulation
	// is given.
	FsyncUS int64 `json:"fsync_us"`
}

// ValidateRoles runs, for each shape and rate measured in runs, the
// simulator's open-loop benchmark with cost (its fsync latency the real
// servers' mean in that run, its timers a real server's: heartbeats every
// 2 ticks of 25 ms, an election timeout of 8; its servers and load
// generator on the real machine's cores, with the real generator's CPU
// time per write, when the runs say so) and compares each role's CPU time per write
// with the real servers'.
func ValidateRoles(runs []RoleRun, cost sim.Cost, seed int64) ([]RoleCheck, error) {
	type key struct {
		shape string
		rate  float64
	}
	groups := map[key][]RoleRun{}
	var keys []key
	for _, r := range runs {
		k := key{r.Shape, r.Rate}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []RoleCheck
	for _, k := range keys {
		g := groups[k]
		shape, err := members.ParseShape(k.shape)
		if err != nil {
			return nil, err
		}
		var fs, fsN float64
		for _, r := range g {
			fs, fsN = fs+r.FsyncSeconds, fsN+r.Fsyncs
		}
		c := cost
		if fsN > 0 && fs > 0 {
			c.FsyncUS = int64(math.Round(1e6 * fs / fsN))
		}
		if g[0].Cores > 0 {
			c.SharedCores, c.LoadCPUPerWriteUS = g[0].Cores, g[0].ClientCPUUS/g[0].Writes
		}
		res, err := sim.RunBench(sim.BenchOptions{Shape: shape, Seed: seed, Cost: c, Rate: k.rate,
			TickUS: 25_000, HeartbeatTicks: 2, ElectionTicks: 8})
		if err != nil {
			return nil, fmt.Errorf("%s at %.0f writes/s: %w", k.shape, k.rate, err)
		}
		byRole := map[string][]RoleRun{}
		for _, r := range g {
			byRole[r.Role] = append(byRole[r.Role], r)
		}
		roles := make([]string, 0, len(byRole))
		for role := range byRole {
			roles = append(roles, role)
		}
		sort.Slice(roles, func(i, j int) bool { return roleOrder(roles[i]) < roleOrder(roles[j]) })
		for _, role := range roles {
			rs := byRole[role]
			var simRole sim.RoleTraffic
			switch role {
			case "leader":
				simRole = res.Leader
			case "coordinator":
				simRole = res.Coordinator
			default:
				simRole = res.Acceptor
			}
			chk := RoleCheck{Shape: k.shape, Rate: k.rate, Role: role, Servers: len(rs), FsyncUS: c.FsyncUS,
				SimCPUUS: simRole.CPUUS, SimFsyncs: simRole.Fsyncs, SimMsgs: simRole.SentMsgs + simRole.RecvMsgs}
			for _, r := range rs {
				n := float64(len(rs)) * r.Writes
				chk.RealCPUUS += r.CPUUS / n
				chk.RealFsyncs += r.Fsyncs / n
				chk.RealMsgs += (r.MsgsSent + r.MsgsRecv) / n
			}
			if chk.RealCPUUS > 0 {
				chk.Error = chk.SimCPUUS/chk.RealCPUUS - 1
			}
			out = append(out, chk)
		}
	}
	return out, nil
}

func roleOrder(role string) int {
	switch role {
	case "leader":
		return 0
	case "coordinator":
		return 1
	}
	return 2
}
