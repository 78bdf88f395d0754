package datatree

import (
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Apply applies one ordered entry and returns its result and the watch
// triggers it caused, in the order ZooKeeper fires them. It sets LastZxid to
// e.Zxid whatever the outcome. The tree retains e.Op.Data (and the slices
// inside a multi's ops): the caller must not modify them afterwards.
//
// An entry the gate (SetGate) holds back changes nothing and fails with
// DATAINCONSISTENCY.
//
// Every op except createSession, deleteContainer, namespaces and noop must
// come from a session in the table, or it fails with SESSIONEXPIRED.
func (t *Tree) Apply(e *txn.Entry) (txn.Result, []Trigger) {
	t.lastZxid = e.Zxid
	if t.gate != nil && !t.gate(e) {
		return fail(zkproto.ErrDataInconsistency), nil
	}
	res, trig := t.apply(e)
	// Only a failed multi can have changed nodes and changed them back.
	t.settle(e.Zxid, e.Op.Kind != txn.KindMulti || res.Err == zkproto.OK)
	return res, trig
}

// apply dispatches e to the function that applies its kind.
func (t *Tree) apply(e *txn.Entry) (txn.Result, []Trigger) {
	switch e.Op.Kind {
	case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindSetACL, txn.KindCheck:
		return t.applyOp(e, &e.Op, nil)
	case txn.KindMulti:
		return t.multi(e)
	case txn.KindCreateSession:
		return t.createSession(e), nil
	case txn.KindCloseSession:
		return t.closeSession(e)
	case txn.KindDeleteContainer:
		return t.deleteContainer(e, &e.Op)
	case txn.KindNamespaces:
		return t.declareNamespaces(e)
	case txn.KindNoop:
		return txn.Result{}, nil
	}
	return fail(zkproto.ErrBadArguments), nil
}

// multi applies e.Op.Ops all or nothing. Each op sees the effects of the ops
// before it (a create then a setData of the same node works; sequential
// creates under one parent get consecutive numbers). The first op to fail
// stops the multi, everything it changed is rolled back through the undo
// log, and the result takes ZooKeeper's error shape. Only creates, deletes,
// setData and checks may appear in a multi; anything else fails as
// BADARGUMENTS at its position (ZooKeeper refuses such a request as
// undecodable).
func (t *Tree) multi(e *txn.Entry) (txn.Result, []Trigger) {
	ops := e.Op.Ops
	res := txn.Result{Multi: make([]txn.Result, len(ops))}
	var trig []Trigger
	failed := -1
	t.logging = true
	for i := range ops {
		o := &ops[i]
		var r txn.Result
		switch o.Kind {
		case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindCheck:
			r, trig = t.applyOp(e, o, trig)
		default:
			r = fail(zkproto.ErrBadArguments)
		}
		res.Multi[i] = r
		if r.Err != zkproto.OK {
			failed = i
			break
		}
	}
	t.logging = false
	if failed < 0 {
		t.clearUndo()
		return res, trig
	}
	t.rollback()
	for i := range res.Multi {
		switch {
		case i < failed:
			res.Multi[i] = txn.Result{}
		case i > failed:
			res.Multi[i] = fail(zkproto.ErrRuntimeInconsistency)
		}
	}
	res.Err = res.Multi[failed].Err
	return res, nil
}

// SetGate makes Apply consult gate before each entry: an entry it refuses
// changes nothing (LastZxid still advances). A server gives it the rule
// of its quarantined namespaces, whose state stays as it was when their
// data was found damaged. A clone does not inherit the gate.
func (t *Tree) SetGate(gate func(*txn.Entry) bool) { t.gate = gate }
