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
