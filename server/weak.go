package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Weak namespaces (docs/namespaces.md, "Weak writes"). A weak write keeps
// its place in the one total order: it is logged, replicated and applied
// like any write, and every replica applies the same sequence. What
// changes is when its client hears of it: in the shortcircuit mode, once
// the write is ordered (standalone: written to the log, before the fsync;
// in an ensemble: appended by the leader, before a quorum holds it), with
// the result it will have when applied. That result is computed on a
// speculative state (spec): a copy of the weak namespaces and of the
// session tables that every ordered entry touching them advances, in the
// order of the log, ahead of the applier. When the write commits it is
// applied as usual, not answered again, and its result is compared with
// the one answered (giraffe_weak_mismatch_total, which must stay 0).

// WeakMode is when a weak namespace's writes are answered.
type WeakMode uint8

// The modes. The zero WeakMode is the default, shortcircuit.
const (
	// WeakShortCircuit answers a weak write once it is ordered, with the
	// result computed on the speculative state.
	WeakShortCircuit WeakMode = iota
	// WeakOff answers weak writes as strong ones: once applied.
	WeakOff
	// WeakDynamicFsync is the comparison baseline of Performance and
	// Reliability Isolation in ZooKeeper (its Dynamic FSync): log
	// appends holding only weak writes are not fsynced, and a weak write
	// is answered once ordered and every entry before it committed
	// (standalone: once applied after the fsyncs of the batches before
	// it). Its weak writes wait for the strong ones before them; it
	// exists to show that.
	WeakDynamicFsync
)

// ParseWeakMode reads giraffe.weakMode.
func ParseWeakMode(s string) (WeakMode, error) {
	switch s {
	case "shortcircuit":
		return WeakShortCircuit, nil
	case "off":
		return WeakOff, nil
	case "dynamicfsync":
		return WeakDynamicFsync, nil
	}
	return WeakShortCircuit, fmt.Errorf("weak mode %q: must be shortcircuit, off or dynamicfsync", s)
}

// String returns the mode as zoo.cfg writes it.
func (m WeakMode) String() string {
	switch m {
	case WeakOff:
		return "off"
	case WeakDynamicFsync:
		return "dynamicfsync"
	}
	return "shortcircuit"
}

// weakModeOf is the mode a server with cfg runs: off when it declares no
// weak namespace.
func weakModeOf(cfg *Config) WeakMode {
	if len(weakRoots(cfg.Namespaces)) == 0 {
		return WeakOff
	}
	return cfg.WeakMode
}

// shortCircuit reports whether this server answers weak writes before
// they are applied: in the shortcircuit mode, and in an ensemble's
// dynamicfsync mode.
func (s *Server) shortCircuit() bool { return s.answerEarly }

// weakOnly reports whether e is a client's weak write: what the
// dynamicfsync mode does not fsync.
func weakOnly(tab nsmap.Table, e *txn.Entry) bool {
	switch e.Op.Kind {
	case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindSetACL, txn.KindCheck, txn.KindMulti:
		_, weak, _ := writeNamespace(tab, &e.Op)
		return weak
	}
	return false
}

// weakRoots returns the roots of tab's weak namespaces.
func weakRoots(tab nsmap.Table) []string {
	var roots []string
	for _, ns := range tab.Namespaces() {
		if ns.Level == nsmap.Weak {
			roots = append(roots, ns.Root())
		}
	}
	return roots
}

// opNamespace returns the namespace op o changes: its path's, except that
// creating or deleting a child of "/" changes "/" (its children, cversion
// and pzxid), which belongs to the default namespace.
func opNamespace(tab nsmap.Table, o *txn.Op) nsmap.Namespace {
	if o.Kind == txn.KindCreate || o.Kind == txn.KindDelete || o.Kind == txn.KindDeleteContainer {
		if strings.LastIndexByte(o.Path, '/') == 0 {
			return nsmap.Default
		}
	}
	return tab.Classify(o.Path)
}

// writeNamespace classifies a client's write: weak when every op changes
// the same weak namespace. A multi that mixes a weak namespace with any
// other cannot be atomic and answered early at once, and is refused
// before it is ordered: mixedAt is then the first op outside the
// namespace of the first (else -1).
func writeNamespace(tab nsmap.Table, o *txn.Op) (ns nsmap.Namespace, weak bool, mixedAt int) {
	if o.Kind != txn.KindMulti {
		ns = opNamespace(tab, o)
		return ns, ns.Level == nsmap.Weak, -1
	}
	if len(o.Ops) == 0 {
		return nsmap.Default, false, -1
	}
	ns = opNamespace(tab, &o.Ops[0])
	anyWeak, first := ns.Level == nsmap.Weak, -1
	for i := 1; i < len(o.Ops); i++ {
		n := opNamespace(tab, &o.Ops[i])
		anyWeak = anyWeak || n.Level == nsmap.Weak
		if n != ns && first < 0 {
			first = i
		}
	}
	if anyWeak && first >= 0 {
		return ns, false, first
	}
	return ns, anyWeak, -1
}

// refuseMixed is the refusal of a multi that mixes a weak namespace with
// another (writeNamespace), logged with what it mixed.
func (s *Server) refuseMixed(o *txn.Op, at int, session int64) *refusal {
	a, b := opNamespace(s.cfg.Namespaces, &o.Ops[0]), opNamespace(s.cfg.Namespaces, &o.Ops[at])
	s.log.Info("refusing a multi across namespaces: a multi that touches a weak namespace must stay inside it",
		"session", sessionHex(session), "first", nsLabel(a), "op", at, "other", nsLabel(b))
	return &refusal{code: zkproto.OK, multi: multiRefusal(len(o.Ops), at, zkproto.ErrBadArguments)}
}

// nsLabel names a namespace in log lines.
func nsLabel(ns nsmap.Namespace) string {
	if ns.Name == "" {
		return "default (strong)"
	}
	return ns.Root() + " (" + ns.Level.String() + ")"
}

// stepTxn applies entry e, proposed by origin, to tree t and owner table
// o (nil on a standalone server): the one transition that the applier and
// the speculative state share, so that they decide alike. A write of a
// session that moved away from origin is refused with SESSIONMOVED and
// changes nothing (moved).
func stepTxn(t *datatree.Tree, o *sessions.Owners, e *txn.Entry, origin gpaxos.ID) (res txn.Result, trig []datatree.Trigger, moved bool) {
	if o != nil && o.MovedAway(e, origin) {
		return txn.Result{Err: zkproto.ErrSessionMoved}, nil, true
	}
	res, trig = t.Apply(e)
	if o != nil {
		o.Track(e, res, origin)
	}
	return res, trig, false
}

// expiryEntry decodes a leader's expiry of a session (a bodyExpiry
// payload) committed at zxid, and reports whether it takes effect under
// owner table o (sessions.Owners.ExpiryCounts); e is nil when it does not
// decode.
func expiryEntry(o *sessions.Owners, payload []byte, zxid uint64) (e *txn.Entry, counts bool) {
	decidedAt, entry, ok := sessions.ParseExpiry(payload)
	if !ok {
		return nil, false
	}
	e, err := txn.Unmarshal(entry)
	if err != nil {
		return nil, false
	}
	e.Zxid = int64(zxid)
	return e, o.ExpiryCounts(e.Session, decidedAt, zxid)
}

// stepMove applies a move of a session (a bodyMove payload) proposed by
// origin and committed at zxid to owner table o, given tree t's sessions:
// OK, or why the move fails; ok is false when the payload does not decode.
func stepMove(t *datatree.Tree, o *sessions.Owners, payload []byte, origin gpaxos.ID, zxid uint64) (id int64, code zkproto.Code, ok bool) {
	id, from, ok := sessions.ParseMove(payload)
	if !ok {
		return 0, zkproto.ErrBadArguments, false
	}
	_, exists := t.Session(id)
	return id, o.Move(id, from, origin, exists, zxid), true
}

// spec is the speculative state of the weak namespaces: a copy of their
// subtrees, of the session table and (in an ensemble) of the owner table,
// which every ordered entry that touches them advances in log order. It
// runs ahead of the applier, so the result it gives a weak write is the one
// applying the write will give. Entries that touch only other namespaces
// are skipped: no weak write's result depends on them. It is not safe for
// concurrent use.
type spec struct {
	tab    nsmap.Table
	tree   *datatree.Tree
	owners *sessions.Owners
	log    *slog.Logger
	// broken is set by an entry the copy cannot follow (a multi across a
	// weak namespace and another, which no server of this version
	// orders): no weak write is answered early from then on.
	broken bool
}

// newSpec copies the weak namespaces of tab, the session table of t and
// the owner table o (nil on a standalone server) as they are after the
// last entry applied to t.
func newSpec(tab nsmap.Table, t *datatree.Tree, o *sessions.Owners, log *slog.Logger) *spec {
	sp := &spec{tab: tab, tree: t.CloneSubtrees(weakRoots(tab)), log: log}
	if o != nil {
		sp.owners = o.Clone()
	}
	return sp
}

// entry advances the speculative state by e, ordered at e.Zxid and
// proposed by origin, and returns its result when e is a weak write to
// answer early.
func (sp *spec) entry(e *txn.Entry, origin gpaxos.ID) (txn.Result, bool) {
	switch e.Op.Kind {
	case txn.KindCreateSession, txn.KindCloseSession, txn.KindNamespaces:
		stepTxn(sp.tree, sp.owners, e, origin)
		return txn.Result{}, false
	case txn.KindDeleteContainer:
		if opNamespace(sp.tab, &e.Op).Level == nsmap.Weak {
			stepTxn(sp.tree, sp.owners, e, origin)
		}
		return txn.Result{}, false
	case txn.KindNoop:
		return txn.Result{}, false
	}
	_, weak, mixedAt := writeNamespace(sp.tab, &e.Op)
	if mixedAt >= 0 && !sp.broken {
		sp.broken = true
		sp.log.Error("a multi across a weak namespace and another was ordered: weak writes are answered once applied from now on",
			"zxid", fmt.Sprintf("0x%x", uint64(e.Zxid)), "session", sessionHex(e.Session))
	}
	if !weak || sp.broken {
		return txn.Result{}, false
	}
	res, _, _ := stepTxn(sp.tree, sp.owners, e, origin)
	return res, true
}

// body advances the speculative state by an ensemble's committed or
// appended proposal body (replicated.go's formats) at zxid from origin,
// and returns the result of a weak write to answer early.
func (sp *spec) body(zxid gpaxos.Zxid, origin gpaxos.ID, body []byte) (txn.Result, bool) {
	if len(body) == 0 {
		return txn.Result{}, false
	}
	switch body[0] {
	case bodyTxn:
		e, err := txn.Unmarshal(body[1:])
		if err != nil {
			return txn.Result{}, false // every replica refuses it alike
		}
		e.Zxid = int64(zxid)
		return sp.entry(e, origin)
	case bodyExpiry:
		if e, counts := expiryEntry(sp.owners, body[1:], uint64(zxid)); counts {
			sp.entry(e, origin)
		}
	case bodyMove:
		stepMove(sp.tree, sp.owners, body[1:], origin, uint64(zxid))
	}
	return txn.Result{}, false
}

// weakCommitted completes weak write pr, answered early, once it is
// applied with result res: it is not answered again, and res must be the
// result it was answered with.
func (s *Server) weakCommitted(pr *proposal, res txn.Result, e *txn.Entry) {
	if got := txn.MarshalResult(nil, &res); !bytes.Equal(got, pr.earlyResult) {
		early, _ := txn.UnmarshalResult(pr.earlyResult)
		s.metrics.weakMismatch.Inc()
		s.log.Error("a weak write was answered early with another result than it has once applied",
			"zxid", fmt.Sprintf("0x%x", uint64(e.Zxid)), "session", sessionHex(e.Session), "op", e.Op.Kind.String(),
			"path", e.Op.Path, "early", fmt.Sprintf("%+v", early), "applied", fmt.Sprintf("%+v", res))
	}
}
