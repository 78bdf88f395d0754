package sim

import (
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// linearizeTimeout bounds porcupine's search, which runs only when the
// committed order is not a linearization of the history itself (below); a
// check that still cannot decide fails the run (failUndecided) instead of
// passing it unchecked.
const linearizeTimeout = 20 * time.Second

// checkLinearizable checks the settled client history: the canonical
// committed order, when it is a linearization, proves it linearizable;
// otherwise porcupine decides.
func (s *Sim) checkLinearizable() string {
	h := s.settledHistory()
	s.stats.unknownCommitted = h.unknownCommitted
	if h.linearizedByLog() {
		return string(porcupine.Ok)
	}
	r := porcupine.CheckOperationsTimeout(regModel, h.porcupineOps(), linearizeTimeout)
	switch r {
	case porcupine.Illegal:
		s.fail(failCorrectness, "linearizability: the client history is not linearizable")
	case porcupine.Unknown:
		s.fail(failUndecided, "linearizability: porcupine could not decide the history within %v", linearizeTimeout)
	}
	return string(r)
}

// settled is a client history whose every operation has an outcome.
type settled struct {
	ops []settledOp
	// unknownCommitted counts the timed-out operations found in the
	// committed sequence.
	unknownCommitted int
}

// settledOp is one operation of a settled history. pos is its entry's
// position among the register operations of the canonical sequence, and
// logged the answer the specification (regState.step) gives there (ok
// false when the operation is not in the sequence, which only a completed
// one can be, if a server replied for an entry the sequence does not
// have).
type settledOp struct {
	porcupine.Operation
	pos    int
	logged regOutput
	ok     bool
}

// settledHistory is the client history with the operations whose client
// never heard back (timed out, or failed by its server) decided from the
// canonical committed sequence. Every operation reaches the registers only
// through the log, so one whose entry is in that sequence took effect at
// its position, with the answer the specification gives there, and before
// a server first applied it: it is given that answer and that moment as
// its return. One whose entry is not there took effect for no client the
// run observed (an entry that commits after the end follows every
// operation that completed), so it is left out. Both are exact. Left open,
// a timed-out operation may take effect at any time after its call, and
// with many of them a single key's history can take porcupine longer than
// any bound.
func (s *Sim) settledHistory() settled {
	type outcome struct {
		out regOutput
		at  int64
		pos int
	}
	happened := map[opID]outcome{}
	regs := map[string]regState{}
	for i, c := range s.chk.ops {
		var out regOutput
		regs[c.op.Key], out = regs[c.op.Key].step(c.op.input())
		happened[opID{c.op.Client, c.op.Seq}] = outcome{out: out, at: c.at, pos: i}
	}
	var h settled
	for _, op := range s.history {
		if op.Op == "lread" || s.isWeak(op.Key) {
			continue // checked when answered (localRead, weak.go): not linearizable by design
		}
		o, ok := happened[opID{op.Client, op.seq}]
		so := settledOp{Operation: porcupine.Operation{ClientId: op.Client,
			Input: regInput{Op: op.Op, Key: op.Key, Value: op.Value, Expect: op.Expect}, Call: op.Call,
			Output: regOutput{Value: op.Result, Version: op.Version, OK: op.OK}, Return: op.Return}, pos: o.pos, logged: o.out, ok: ok}
		if !op.Done {
			if !ok {
				continue
			}
			h.unknownCommitted++
			so.Output, so.Return = o.out, o.at
		}
		h.ops = append(h.ops, so)
	}
	return h
}

// linearizedByLog reports whether the committed order is a linearization
// of h: every operation is in it with the result it gives there, and every
// operation that returned before another was called precedes it. It runs in
// O(n log n), and is exact when it says yes; when it says no, another
// order may still be one, which porcupine searches for.
func (h settled) linearizedByLog() bool {
	ops := slices.Clone(h.ops)
	for _, op := range ops {
		if !op.ok || op.Output != op.logged {
			return false
		}
	}
	slices.SortFunc(ops, func(a, b settledOp) int { return a.pos - b.pos })
	latestCall := int64(-1 << 63)
	for _, op := range ops {
		if op.Return < latestCall {
			return false // it returned before an operation ordered before it was called
		}
		latestCall = max(latestCall, op.Call)
	}
	return true
}

// porcupineOps is h as porcupine's operations.
func (h settled) porcupineOps() []porcupine.Operation {
	out := make([]porcupine.Operation, len(h.ops))
	for i, op := range h.ops {
		out[i] = op.Operation
	}
	return out
}
