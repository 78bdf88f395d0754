package server

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// specGen draws an ensemble's proposal bodies: sessions created, closed,
// expired (in their epoch or not) and moved between three origins, and
// writes in the weak namespace /2, the strong /1 and the default one,
// multis inside /2 among them.
type specGen struct {
	r *rand.Rand
}

var (
	specSessions = []int64{0x101, 0x102, 0x103, 0x104}
	specPaths    = []string{"/2/a", "/2/a/b", "/2/a/b/c", "/2/b", "/2/", "/2/a/", "/2", "/1/a", "/1/a/b", "/x", "/2x", "/"}
)

func (g *specGen) path() string { return specPaths[g.r.IntN(len(specPaths))] }

func (g *specGen) op() txn.Op {
	p := g.path()
	switch g.r.IntN(8) {
	case 0, 1, 2:
		return txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate2, Path: p, Data: []byte("d"),
			ACL: zkproto.OpenACLUnsafe, Flags: int32(g.r.IntN(4))}
	case 3:
		return txn.Op{Kind: txn.KindDelete, OpCode: zkproto.OpDelete, Path: p, Version: -1}
	case 4, 5:
		return txn.Op{Kind: txn.KindSetData, OpCode: zkproto.OpSetData, Path: p, Data: []byte(fmt.Sprint(g.r.IntN(9))),
			Version: int32(g.r.IntN(3)) - 1}
	case 6:
		return txn.Op{Kind: txn.KindCheck, OpCode: zkproto.OpCheck, Path: p, Version: int32(g.r.IntN(3)) - 1}
	}
	return txn.Op{Kind: txn.KindSetACL, OpCode: zkproto.OpSetACL, Path: p, ACL: zkproto.ReadACLUnsafe, Version: -1}
}

// body returns the next body and its origin; z is the zxid it is ordered
// at.
func (g *specGen) body(z uint64) (gpaxos.ID, []byte) {
	origin := gpaxos.ID(1 + g.r.IntN(3))
	sid := specSessions[g.r.IntN(len(specSessions))]
	e := &txn.Entry{Session: sid, Time: int64(z)}
	switch k := g.r.IntN(30); {
	case k < 2:
		e.Op, e.Timeout, e.Passwd = txn.Op{Kind: txn.KindCreateSession}, 4000, []byte("pw")
	case k < 3:
		e.Op = txn.Op{Kind: txn.KindCloseSession}
	case k < 5:
		// The leader's expiry, decided in this epoch or the previous one,
		// before or after the session's last move.
		e.Op = txn.Op{Kind: txn.KindCloseSession}
		decidedAt := z - uint64(g.r.IntN(20))
		if g.r.IntN(4) == 0 {
			decidedAt -= 1 << 32
		}
		return origin, e.Marshal(sessions.AppendExpiry([]byte{bodyExpiry}, decidedAt))
	case k < 8:
		return origin, moveBody(sid, gpaxos.ID(g.r.IntN(4)))
	case k < 9:
		e.Session, e.Op = 0, txn.Op{Kind: txn.KindDeleteContainer, Path: g.path()}
	case k < 13:
		ops := make([]txn.Op, 1+g.r.IntN(3))
		for i := range ops {
			ops[i] = g.op()
			if ops[i].Kind == txn.KindSetACL {
				ops[i].Kind, ops[i].OpCode = txn.KindCheck, zkproto.OpCheck
			}
			if g.r.IntN(2) == 0 { // mostly inside /2, as a weak multi must be
				ops[i].Path = "/2/" + []string{"a", "b", "a/b"}[g.r.IntN(3)]
			}
		}
		e.Op = txn.Op{Kind: txn.KindMulti, OpCode: zkproto.OpMulti, Ops: ops}
	default:
		e.Op = g.op()
	}
	return origin, e.Marshal([]byte{bodyTxn})
}

// deletesRoot reports whether o deletes a declared root, which the server
// refuses before ordering.
func deletesRoot(tab nsmap.Table, o *txn.Op) bool {
	ops := []txn.Op{*o}
	if o.Kind == txn.KindMulti {
		ops = o.Ops
	}
	for _, x := range ops {
		if x.Kind == txn.KindDelete && tab.IsRoot(x.Path) {
			return true
		}
	}
	return false
}

// applyFull applies a body to the whole state as the applier does.
func applyFull(t *datatree.Tree, o *sessions.Owners, z gpaxos.Zxid, origin gpaxos.ID, body []byte) txn.Result {
	switch body[0] {
	case bodyTxn:
		e, err := txn.Unmarshal(body[1:])
		if err != nil {
			panic(err)
		}
		e.Zxid = int64(z)
		res, _, _ := stepTxn(t, o, e, origin)
		return res
	case bodyExpiry:
		if e, counts := expiryEntry(o, body[1:], uint64(z)); counts {
			res, _, _ := stepTxn(t, o, e, origin)
			return res
		}
	case bodyMove:
		_, code, _ := stepMove(t, o, body[1:], origin, uint64(z))
		return txn.Result{Err: code}
	}
	return txn.Result{}
}

// TestSpecGivesTheCommittedResult: a speculative state copied from the
// committed state at a random point of a random history, then fed every
// later body, answers exactly the weak writes (all ops in /2, none
// creating or deleting a child of "/", no multi mixing /2 with another
// namespace, which the server refuses before ordering), each with the
// result applying it to the whole state gives: SESSIONMOVED after moves,
// expiries that take effect or not, ephemerals closed with their
// sessions, sequential names, multis rolled back.
func TestSpecGivesTheCommittedResult(t *testing.T) {
	var tab nsmap.Table
	if err := tab.Declare("1", nsmap.Strong); err != nil {
		t.Fatal(err)
	}
	if err := tab.Declare("2", nsmap.Weak); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	answered := 0
	for seed := range 100 {
		g := &specGen{r: rand.New(rand.NewPCG(uint64(seed), 3))}
		full, owners := datatree.New(), sessions.NewOwners()
		z := uint64(1)<<32 | 1
		stepTxn(full, owners, &txn.Entry{Zxid: int64(z), Op: txn.Op{Kind: txn.KindNamespaces, Data: tab.Encode()}}, 1)
		var sp *spec
		copyAt := g.r.IntN(200)
		for step := range 400 {
			if step == copyAt {
				sp = newSpec(tab, full, owners, log)
			}
			z++
			if g.r.IntN(60) == 0 {
				z = (z>>32+1)<<32 | 1 // a new epoch
			}
			origin, body := g.body(z)
			if body[0] == bodyTxn {
				// What the server refuses before ordering never reaches
				// the log.
				e, _ := txn.Unmarshal(body[1:])
				if _, _, mixed := writeNamespace(tab, &e.Op); mixed >= 0 || deletesRoot(tab, &e.Op) {
					continue
				}
			}
			want := applyFull(full, owners, gpaxos.Zxid(z), origin, body)
			if sp == nil {
				continue
			}
			got, answer := sp.body(gpaxos.Zxid(z), origin, body)
			weak := false
			if body[0] == bodyTxn {
				e, _ := txn.Unmarshal(body[1:])
				switch e.Op.Kind {
				case txn.KindCreate, txn.KindDelete, txn.KindSetData, txn.KindSetACL, txn.KindCheck, txn.KindMulti:
					_, weak, _ = writeNamespace(tab, &e.Op) // a client's write
				}
			}
			if answer != weak {
				e, _ := txn.Unmarshal(body[1:])
				t.Fatalf("seed %d step %d: %+v answered %v, weak %v", seed, step, e, answer, weak)
			}
			if !answer {
				continue
			}
			answered++
			if !bytes.Equal(txn.MarshalResult(nil, &got), txn.MarshalResult(nil, &want)) {
				e, _ := txn.Unmarshal(body[1:])
				t.Fatalf("seed %d step %d: %+v from %d\n speculative %+v\n committed   %+v", seed, step, e, origin, got, want)
			}
		}
	}
	if answered < 1000 {
		t.Fatalf("only %d weak writes answered", answered)
	}
}
