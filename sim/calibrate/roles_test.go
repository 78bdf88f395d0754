package calibrate

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/sim"
)

// TestFitRolesRecoversTheCosts fits servers whose CPU time was made from
// known per-event costs (and a little noise): the fit must give those
// costs back, keep the per-byte and per-entry costs it was given, and
// leave out a term that costs nothing rather than make it negative.
func TestFitRolesRecoversTheCosts(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	want := sim.Cost{IdleCPUUSPerSec: 20000, FsyncCPUUS: 130, CPUPerEntryUS: 1.5, CPUPerClientWriteUS: 12, CPUPerMsgUS: 5, CPUPerRecvMsgUS: 0, CPUPerByteUS: 0.001}
	var runs []RoleRun
	for i := 0; i < 40; i++ {
		r := RoleRun{Shape: "classic-3", Rate: 1000, Seconds: 5 + rng.Float64()*5, Writes: 5000,
			Fsyncs: 1000 + rng.Float64()*4000, Persisted: 5000 + rng.Float64()*1000, ClientWrites: rng.Float64() * 3000,
			MsgsSent: rng.Float64() * 20000, MsgsRecv: rng.Float64() * 20000, BytesSent: rng.Float64() * 1e7, BytesRecv: rng.Float64() * 1e7}
		r.CPUUS = want.IdleCPUUSPerSec*r.Seconds + want.FsyncCPUUS*r.Fsyncs + want.CPUPerEntryUS*r.Persisted + want.CPUPerClientWriteUS*r.ClientWrites +
			want.CPUPerMsgUS*r.MsgsSent + want.CPUPerRecvMsgUS*r.MsgsRecv + want.CPUPerByteUS*(r.BytesSent+r.BytesRecv)
		r.CPUUS *= 1 + 0.001*rng.NormFloat64()
		runs = append(runs, r)
	}
	base := sim.CalibratedCost
	base.CPUPerByteUS, base.CPUPerEntryUS = want.CPUPerByteUS, want.CPUPerEntryUS
	got, err := FitRoles(runs, base)
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want, tol float64) {
		if math.Abs(got-want) > tol {
			t.Errorf("%s: fitted %.3f, want %.3f", name, got, want)
		}
	}
	near("idle", got.IdleCPUUSPerSec, want.IdleCPUUSPerSec, 500)
	near("fsync", got.FsyncCPUUS, want.FsyncCPUUS, 3)
	near("client write", got.CPUPerClientWriteUS, want.CPUPerClientWriteUS, 1)
	near("message sent", got.CPUPerMsgUS, want.CPUPerMsgUS, 0.5)
	near("message received", got.CPUPerRecvMsgUS, want.CPUPerRecvMsgUS, 0.5)
	if got.CPUPerRecvMsgUS < 0 || got.CPUPerEntryUS != want.CPUPerEntryUS || got.CPUPerByteUS != want.CPUPerByteUS || got.FsyncUS != base.FsyncUS {
		t.Errorf("fitted %+v: a cost negative, or the entry or byte cost or fsync latency not kept", got)
	}
}

// TestValidateRolesComparesEachRole runs the simulator for a measured
// shape and rate and checks that every real role gets a simulated CPU
// time per write to compare with.
func TestValidateRolesComparesEachRole(t *testing.T) {
	const line = `{"shape":"classic-3","rate":500,"id":%d,"role":"%s","seconds":4,"writes":2000,"cpu_us":%d,"fsyncs":1800,"fsync_seconds":0.9,"persisted":2000,"client_writes":700,"msgs_sent":%d,"msgs_recv":%d,"bytes_sent":1e6,"bytes_recv":1e6}`
	var b strings.Builder
	for i, role := range []string{"leader", "acceptor", "acceptor"} {
		cpu, sent, recv := 400000, 3000, 1500
		if role == "leader" {
			cpu, sent, recv = 500000, 6000, 7000
		}
		fmt.Fprintf(&b, line+"\n", i+1, role, cpu, sent, recv)
	}
	runs, err := ReadRoleRuns(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	cost := sim.CalibratedCost
	cost.FsyncCPUUS, cost.IdleCPUUSPerSec, cost.SelfMsgsFree = 100, 20000, true
	checks, err := ValidateRoles(runs, cost, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 || checks[0].Role != "leader" || checks[1].Role != "acceptor" || checks[1].Servers != 2 {
		t.Fatalf("checks %+v: want the leader, then the 2 acceptors", checks)
	}
	for _, c := range checks {
		if c.SimCPUUS <= 0 || c.SimFsyncs <= 0 || c.FsyncUS != 500 {
			t.Errorf("%+v: want a simulated CPU time and fsyncs, at the real 0.5 ms fsync", c)
		}
	}
	if want := 400000.0 / 2000; math.Abs(checks[1].RealCPUUS-want) > 1e-9 {
		t.Errorf("real acceptor CPU %.1f µs per write, want %.1f", checks[1].RealCPUUS, want)
	}
}
