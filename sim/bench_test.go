package sim

import "testing"

// TestBenchForestBeatsClassic runs the calibrated benchmark at 27 servers:
// the forest must sustain more writes than the star, whose leader sends
// every entry to every server.
func TestBenchForestBeatsClassic(t *testing.T) {
	short := BenchOptions{Outstanding: 500, WarmupUS: 200_000, MeasureUS: 300_000}
	short.Nodes = 27
	c := short
	c.Classic = true
	rc, err := RunBench(c)
	if err != nil {
		t.Fatal(err)
	}
	f := short
	f.Trees, f.Children = 3, 3
	rf, err := RunBench(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("classic %+v", rc)
	t.Logf("forest  %+v", rf)
	if rc.ThroughputOps <= 0 || rf.ThroughputOps <= rc.ThroughputOps {
		t.Fatalf("forest %.0f ops/s, classic %.0f ops/s: want forest > classic > 0", rf.ThroughputOps, rc.ThroughputOps)
	}
}

// TestOpenLoopBenchKeepsItsRate runs the open-loop benchmark below
// saturation: the ensemble must commit the offered rate, and each role's
// CPU time per write must include the per-write, per-fsync and idle terms
// of the model (a server that writes its log pays at least one entry, an
// idle second's share and a fraction of an fsync per write).
func TestOpenLoopBenchKeepsItsRate(t *testing.T) {
	cost := CalibratedCost
	cost.FsyncCPUUS, cost.CPUPerEntryUS, cost.IdleCPUUSPerSec, cost.SelfMsgsFree = 100, 2, 20000, true
	o := BenchOptions{Cost: cost, Rate: 2000, WarmupUS: 200_000, MeasureUS: 1_000_000}
	o.Nodes, o.Classic = 3, true
	r, err := RunBench(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", r)
	if r.ThroughputOps < 1800 || r.ThroughputOps > 2200 {
		t.Fatalf("%.0f writes/s committed at an offered 2,000", r.ThroughputOps)
	}
	for role, rt := range map[string]RoleTraffic{"leader": r.Leader, "acceptor": r.Acceptor} {
		floor := cost.CPUPerEntryUS + cost.IdleCPUUSPerSec/r.ThroughputOps + cost.FsyncCPUUS*rt.Fsyncs
		if rt.Fsyncs <= 0 || rt.Fsyncs > 1 || rt.CPUUS < floor {
			t.Errorf("%s: %.2f fsyncs and %.1f µs of CPU per write, want (0, 1] and at least %.1f", role, rt.Fsyncs, rt.CPUUS, floor)
		}
	}
}

// TestAtLeaderSendsEveryWriteThroughTheLeader runs the broadcast in
// isolation: no acceptor forwards a client's write, so what acceptors
// send per write (acknowledgments) is a small part of what they send when
// clients are spread over the servers.
func TestAtLeaderSendsEveryWriteThroughTheLeader(t *testing.T) {
	o := BenchOptions{Outstanding: 200, WarmupUS: 100_000, MeasureUS: 200_000}
	o.Nodes, o.Classic = 9, true
	spread, err := RunBench(o)
	if err != nil {
		t.Fatal(err)
	}
	o.AtLeader = true
	alone, err := RunBench(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("spread %+v\nat the leader %+v", spread.Acceptor, alone.Acceptor)
	if alone.ThroughputOps <= 0 || alone.Acceptor.SentBytes*3 > spread.Acceptor.SentBytes {
		t.Fatalf("at the leader: %.0f writes/s, acceptors send %.0f bytes per write against %.0f with clients spread",
			alone.ThroughputOps, alone.Acceptor.SentBytes, spread.Acceptor.SentBytes)
	}
}
