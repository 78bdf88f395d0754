package calibrate

import "testing"

// TestRunMeasures runs a short calibration on the real transport and log:
// every figure must come out positive, and a large message must cost more
// than a small one.
func TestRunMeasures(t *testing.T) {
	m, err := Run(t.TempDir(), 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", m)
	if m.SmallMsgCPUUS <= 0 || m.LargeMsgCPUUS <= m.SmallMsgCPUUS {
		t.Fatalf("CPU per message: small %.2f µs, large %.2f µs", m.SmallMsgCPUUS, m.LargeMsgCPUUS)
	}
	if m.Cost.CPUPerByteUS <= 0 || m.Cost.FsyncUS <= 0 {
		t.Fatalf("cost %+v: want positive per-byte CPU and fsync", m.Cost)
	}
}

// TestEntryCPUUSMeasures measures one entry's log append and apply: a
// positive figure, below a millisecond.
func TestEntryCPUUSMeasures(t *testing.T) {
	us, err := EntryCPUUS(t.TempDir(), 20000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.2f µs per entry", us)
	if us <= 0 || us > 1000 {
		t.Fatalf("%.2f µs per entry", us)
	}
}
