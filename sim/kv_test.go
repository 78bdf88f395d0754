package sim

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestKVModelRejects checks that the linearizability checker would catch a
// stale read and a lost write, so a passing run means something.
func TestKVModelRejects(t *testing.T) {
	op := func(c int, in kvInput, out kvOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		h    []porcupine.Operation
		want bool
	}{
		{"write then read", []porcupine.Operation{
			op(0, kvInput{Op: "write", Key: "k", Value: "a"}, kvOutput{OK: true}, 0, 10),
			op(1, kvInput{Op: "read", Key: "k"}, kvOutput{Value: "a", OK: true}, 20, 30),
		}, true},
		{"stale read", []porcupine.Operation{
			op(0, kvInput{Op: "write", Key: "k", Value: "a"}, kvOutput{OK: true}, 0, 10),
			op(1, kvInput{Op: "read", Key: "k"}, kvOutput{Value: "", OK: true}, 20, 30),
		}, false},
		{"cas succeeds twice on one value", []porcupine.Operation{
			op(0, kvInput{Op: "cas", Key: "k", Value: "a", Expect: ""}, kvOutput{OK: true}, 0, 10),
			op(1, kvInput{Op: "cas", Key: "k", Value: "b", Expect: ""}, kvOutput{OK: true}, 20, 30),
		}, false},
		{"unknown write may or may not apply", []porcupine.Operation{
			op(0, kvInput{Op: "write", Key: "k", Value: "a"}, kvOutput{Unknown: true}, 0, 1<<62),
			op(1, kvInput{Op: "read", Key: "k"}, kvOutput{Value: "a", OK: true}, 20, 30),
			op(1, kvInput{Op: "read", Key: "k"}, kvOutput{Value: "a", OK: true}, 40, 50),
		}, true},
	}
	for _, tt := range tests {
		if got := porcupine.CheckOperations(kvModel, tt.h); got != tt.want {
			t.Errorf("%s: linearizable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestKVEncoding(t *testing.T) {
	op := kvOp{Client: 3, Seq: 9, Op: "cas", Key: "k1", Value: "v", Expect: "e"}
	got, ok := decodeOp(op.encode())
	if !ok || got != op {
		t.Fatalf("round trip: %+v %v", got, ok)
	}
	if _, ok := decodeOp([]byte("garbage")); ok {
		t.Fatal("decoded garbage")
	}
	s := newKV(true)
	s.apply(kvOp{Client: 1, Seq: 1, Op: "write", Key: "a", Value: "1"})
	s.apply(kvOp{Client: 1, Seq: 2, Op: "write", Key: "b"})
	r := restoreKV(s.snapshot(), true)
	if len(r.vals) != 2 || r.vals["a"] != "1" || len(r.once) != 2 {
		t.Fatalf("snapshot round trip: %+v", r)
	}
	if _, applied := r.apply(kvOp{Client: 1, Seq: 1, Op: "write", Key: "a", Value: "2"}); applied || r.vals["a"] != "1" {
		t.Fatalf("a copy of an applied operation applied again: %+v", r)
	}
	plain := newKV(false)
	plain.apply(kvOp{Client: 1, Seq: 1, Op: "write", Key: "a", Value: "1"})
	if got := string(plain.snapshot()); got != "a\x001\x00" {
		t.Fatalf("snapshot without at-most-once: %q", got)
	}
}
