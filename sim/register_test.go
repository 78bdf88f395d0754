package sim

import (
	"math/rand"
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestRegModelRejects checks that the linearizability checker would catch
// a stale read, a lost write and a version reused, so a passing run means
// something.
func TestRegModelRejects(t *testing.T) {
	op := func(c int, in regInput, out regOutput, call, ret int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Input: in, Output: out, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		h    []porcupine.Operation
		want bool
	}{
		{"write then read", []porcupine.Operation{
			op(0, regInput{Op: "write", Key: "k", Value: "a"}, regOutput{OK: true, Version: 1}, 0, 10),
			op(1, regInput{Op: "read", Key: "k"}, regOutput{Value: "a", Version: 1, OK: true}, 20, 30),
		}, true},
		{"stale read", []porcupine.Operation{
			op(0, regInput{Op: "write", Key: "k", Value: "a"}, regOutput{OK: true, Version: 1}, 0, 10),
			op(1, regInput{Op: "read", Key: "k"}, regOutput{Value: "", OK: true}, 20, 30),
		}, false},
		{"cas succeeds twice on one version", []porcupine.Operation{
			op(0, regInput{Op: "cas", Key: "k", Value: "a", Expect: 0}, regOutput{OK: true, Version: 1}, 0, 10),
			op(1, regInput{Op: "cas", Key: "k", Value: "b", Expect: 0}, regOutput{OK: true, Version: 1}, 20, 30),
		}, false},
		{"write applied twice", []porcupine.Operation{
			op(0, regInput{Op: "write", Key: "k", Value: "a"}, regOutput{OK: true, Version: 1}, 0, 10),
			op(1, regInput{Op: "read", Key: "k"}, regOutput{Value: "a", Version: 2, OK: true}, 20, 30),
		}, false},
		{"unknown write may or may not apply", []porcupine.Operation{
			op(0, regInput{Op: "write", Key: "k", Value: "a"}, regOutput{Unknown: true}, 0, 1<<62),
			op(1, regInput{Op: "read", Key: "k"}, regOutput{Value: "a", Version: 1, OK: true}, 20, 30),
			op(1, regInput{Op: "read", Key: "k"}, regOutput{Value: "a", Version: 1, OK: true}, 40, 50),
		}, true},
	}
	for _, tt := range tests {
		if got := porcupine.CheckOperations(regModel, tt.h); got != tt.want {
			t.Errorf("%s: linearizable = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestRegisterOnTree applies random operations, encoded as servers propose
// them, to the data tree and to the specification: every answer the tree
// gives must be the specification's.
func TestRegisterOnTree(t *testing.T) {
	const clients, keys = 3, 2
	tree := newTree(clients, keys)
	regs := map[string]regState{}
	r := rand.New(rand.NewSource(1))
	for i := 1; i <= 2000; i++ {
		op := regOp{Client: r.Intn(clients), Seq: i, Key: keyName(r.Intn(keys))}
		switch r.Intn(3) {
		case 0:
			op.Op = "read"
		case 1:
			op.Op, op.Value = "write", "w"+keyName(i)
		default:
			op.Op, op.Value, op.Expect = "cas", "c"+keyName(i), regs[op.Key].version+int32(r.Intn(2))
		}
		got, e, ok := decodeRegOp(op.body(int64(i)))
		if !ok || got != op {
			t.Fatalf("round trip of %+v: %+v %v", op, got, ok)
		}
		e.Zxid = int64(i)
		out := applyReg(tree, op, e)
		var want regOutput
		regs[op.Key], want = regs[op.Key].step(op.input())
		if out != want {
			t.Fatalf("%+v: tree answered %+v, the specification %+v", op, out, want)
		}
	}
	if _, _, ok := decodeRegOp([]byte("garbage")); ok {
		t.Fatal("decoded garbage")
	}
}
