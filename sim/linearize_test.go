package sim

import (
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// TestSettledHistory checks that the committed sequence decides timed-out
// operations both ways: one whose entry committed happened (a read may see
// it), one whose entry did not never happened (a read that sees it is not
// linearizable, which an open-ended history would have allowed); and that
// the committed order proves a history linearizable only when it is a
// linearization of it.
func TestSettledHistory(t *testing.T) {
	write := func(c, seq int, v string, call int64) *histOp {
		return &histOp{Client: c, Op: "write", Key: "k", Value: v, Call: call, Return: -1, seq: seq}
	}
	done := func(op *histOp, ret int64, version int32) *histOp {
		op.Return, op.Done, op.OK, op.Version = ret, true, true, version
		return op
	}
	read := func(c, seq int, v string, version int32, call, ret int64) *histOp {
		return &histOp{Client: c, Op: "read", Key: "k", Call: call, Return: ret, Done: true, OK: true, Result: v, Version: version, seq: seq}
	}
	committed := []committedOp{
		{op: regOp{Client: 0, Seq: 1, Op: "write", Key: "k", Value: "a"}, at: 30},
		{op: regOp{Client: 1, Seq: 1, Op: "read", Key: "k"}, at: 40},
	}
	reordered := []committedOp{
		{op: regOp{Client: 1, Seq: 1, Op: "write", Key: "k", Value: "b"}, at: 35},
		{op: regOp{Client: 0, Seq: 1, Op: "write", Key: "k", Value: "a"}, at: 36},
		{op: regOp{Client: 2, Seq: 1, Op: "read", Key: "k"}, at: 45},
	}
	tests := []struct {
		name      string
		history   []*histOp
		committed []committedOp
		want      bool // linearizable
		byLog     bool // the committed order shows it
		settled   int
	}{
		{"committed write seen", []*histOp{write(0, 1, "a", 10), read(1, 1, "a", 1, 20, 50)}, committed, true, true, 1},
		{"uncommitted write seen", []*histOp{write(0, 1, "a", 10), write(0, 2, "b", 60), read(1, 1, "b", 2, 70, 80)}, committed, false, false, 1},
		{"committed write missed", []*histOp{write(0, 1, "a", 10), read(1, 1, "", 0, 35, 50)}, committed, false, false, 1},
		{"log order against real time", []*histOp{done(write(0, 1, "a", 10), 20, 2), done(write(1, 1, "b", 30), 38, 1), read(2, 1, "a", 2, 40, 50)}, reordered, false, false, 0},
	}
	for _, tt := range tests {
		s := &Sim{chk: newChecker(), history: tt.history}
		s.chk.ops = tt.committed
		h := s.settledHistory()
		if h.unknownCommitted != tt.settled {
			t.Errorf("%s: %d settled as committed, want %d", tt.name, h.unknownCommitted, tt.settled)
		}
		if got := h.linearizedByLog(); got != tt.byLog {
			t.Errorf("%s: linearized by the log = %v, want %v", tt.name, got, tt.byLog)
		}
		if got := porcupine.CheckOperations(regModel, h.porcupineOps()); got != tt.want {
			t.Errorf("%s: linearizable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestUndecidedSettles runs a seed whose 65 timed-out operations on one key
// kept porcupine from deciding within its bound while they were left
// open; settled from the committed sequence, the history is decided.
func TestUndecidedSettles(t *testing.T) {
	r := Run(Options{Seed: 880002, Shape: members.Shape{Nodes: 4, Trees: 2, Children: 2}, Reconfig: true, MaxBatch: 1}, nil, false)
	if !r.OK || r.Linearizable != string(porcupine.Ok) {
		t.Fatalf("%s %s: linearizable %s", r.Kind, r.Failure, r.Linearizable)
	}
	if r.OpsUnknown == 0 || r.UnknownCommitted == 0 {
		t.Fatalf("want timed-out operations, some committed: %+v", r)
	}
}
