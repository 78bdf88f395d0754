package sim

import (
	"time"

	"github.com/anishathalye/porcupine"
)

// linearizeTimeout bounds porcupine's search. A settled history (below)
// rarely needs a fraction of it; a check that still cannot decide fails
// the run (failUndecided) instead of passing it unchecked.
const linearizeTimeout = 20 * time.Second

// checkLinearizable runs porcupine on the settled client history.
func (s *Sim) checkLinearizable() string {
	ops, committed := s.settledHistory()
	s.stats.unknownCommitted = committed
	r := porcupine.CheckOperationsTimeout(kvModel, ops, linearizeTimeout)
	switch r {
	case porcupine.Illegal:
		s.fail(failCorrectness, "linearizability: the client history is not linearizable")
	case porcupine.Unknown:
		s.fail(failUndecided, "linearizability: porcupine could not decide the history within %v", linearizeTimeout)
	}
	return string(r)
}

// settledHistory is the client history as porcupine operations, with the
// operations whose client never heard back (timed out) decided from the
// canonical committed sequence. Every operation reaches the register only
// through the log, so one whose entry is in that sequence took effect at
// its position, with the result every server computed there, and before a
// server first applied it: it is given that result and that moment as its
// return. One whose entry is not there took effect for no client the run
// observed (an entry that commits after the end follows every operation
// that completed), so it is left out. Both are exact, and a history without
// open-ended operations is one porcupine decides quickly; with many left
// open, a single key's history can take it longer than any bound.
// committed counts the timed-out operations found in the sequence.
func (s *Sim) settledHistory() (ops []porcupine.Operation, committed int) {
	type outcome struct {
		res kvResult
		at  int64
	}
	happened := map[opID]outcome{}
	kv := newKV(true) // a copy of an operation changes nothing (kvStore)
	for _, c := range s.chk.ops {
		if res, applied := kv.apply(c.op); applied {
			happened[opID{c.op.Client, c.op.Seq}] = outcome{res: res, at: c.at}
		}
	}
	for _, h := range s.history {
		if h.Dropped {
			continue
		}
		in := kvInput{Op: h.Op, Key: h.Key, Value: h.Value, Expect: h.Expect}
		out, ret := kvOutput{Value: h.Result, OK: h.OK}, h.Return
		if !h.Done {
			o, ok := happened[opID{h.Client, h.seq}]
			if !ok {
				continue
			}
			committed++
			out, ret = kvOutput{Value: o.res.Value, OK: o.res.OK}, o.at
		}
		ops = append(ops, porcupine.Operation{ClientId: h.Client, Input: in, Call: h.Call, Output: out, Return: ret})
	}
	return ops, committed
}
