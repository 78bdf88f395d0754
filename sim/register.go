package sim

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"

	"github.com/anishathalye/porcupine"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// The workload is a set of registers, one znode of the data tree
// (internal/datatree) per key, which clients read, write and
// compare-and-set through the log, as a ZooKeeper client does with a sync
// and a getData, a setData, and a setData of the version it last saw.
// Every server applies the committed operations to its own tree, and the
// server a client asked answers it with what its tree returned.

// regOp is one client operation on a register.
type regOp struct {
	Client, Seq int
	Op          string // read | write | cas
	Key         string
	Value       string // write and cas: the data written
	Expect      int32  // cas: the znode version expected
}

// regMagic starts every register operation's proposal body, so that the
// apply path tells them from benchmark payloads (benchMagic).
const regMagic = 0xC5

// regPath is the znode of a register.
func regPath(key string) string { return "/" + key }

// keyName names the workload's i-th register.
func keyName(i int) string { return "k" + strconv.Itoa(i) }

// sessionOf is the session a client's operations run under; every
// server's tree starts with it (newTree).
func sessionOf(client int) int64 { return int64(client) + 1 }

// body encodes op as the body a server proposes: regMagic, the client and
// its sequence number (which let the checker settle operations whose
// client never heard back), then the ordered write, a txn entry: a read is
// a no-op naming the znode (a sync: its place in the order, the znode read
// when it is applied), a write an unconditional setData, a cas a setData
// of the version expected. timeMS is the proposer's clock, which decides
// the znode's mtime as a production server's does.
func (op regOp) body(timeMS int64) []byte {
	e := txn.Entry{Time: timeMS, Session: sessionOf(op.Client)}
	switch op.Op {
	case "read":
		e.Op = txn.Op{Kind: txn.KindNoop, Path: regPath(op.Key)}
	case "write":
		e.Op = txn.Op{Kind: txn.KindSetData, OpCode: zkproto.OpSetData, Path: regPath(op.Key), Data: []byte(op.Value), Version: -1}
	case "cas":
		e.Op = txn.Op{Kind: txn.KindSetData, OpCode: zkproto.OpSetData, Path: regPath(op.Key), Data: []byte(op.Value), Version: op.Expect}
	}
	b := []byte{regMagic}
	b = binary.AppendUvarint(b, uint64(op.Client))
	b = binary.AppendUvarint(b, uint64(op.Seq))
	return e.Marshal(b)
}

// decodeRegOp parses a proposal body; ok is false for anything else.
func decodeRegOp(b []byte) (op regOp, e *txn.Entry, ok bool) {
	if len(b) == 0 || b[0] != regMagic {
		return regOp{}, nil, false
	}
	b = b[1:]
	c, n := binary.Uvarint(b)
	if n <= 0 {
		return regOp{}, nil, false
	}
	b = b[n:]
	seq, n := binary.Uvarint(b)
	if n <= 0 {
		return regOp{}, nil, false
	}
	e, err := txn.Unmarshal(b[n:])
	if err != nil || len(e.Op.Path) < 2 {
		return regOp{}, nil, false
	}
	op = regOp{Client: int(c), Seq: int(seq), Key: e.Op.Path[1:], Value: string(e.Op.Data)}
	switch {
	case e.Op.Kind == txn.KindNoop:
		op.Op = "read"
	case e.Op.Kind == txn.KindSetData && e.Op.Version == -1:
		op.Op = "write"
	case e.Op.Kind == txn.KindSetData:
		op.Op, op.Expect = "cas", e.Op.Version
	default:
		return regOp{}, nil, false
	}
	return op, e, true
}

// newTree is the tree every server starts from: a fresh ZooKeeper tree
// with a session per client and an empty persistent znode per register,
// what the workload's clients would create before their first operation.
func newTree(clients, keys int) *datatree.Tree {
	t := datatree.New()
	for c := 0; c < clients; c++ {
		t.Apply(&txn.Entry{Session: sessionOf(c), Timeout: 30_000, Passwd: []byte(fmt.Sprintf("client-%d", c)),
			Op: txn.Op{Kind: txn.KindCreateSession}})
	}
	for k := 0; k < keys && clients > 0; k++ {
		t.Apply(&txn.Entry{Session: sessionOf(0), Op: txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate,
			Path: regPath(keyName(k)), Data: []byte{}, ACL: zkproto.OpenACLUnsafe, Flags: zkproto.ModePersistent}})
	}
	return t
}

// applyReg applies e, op's committed entry with its zxid set, to t and
// returns the answer the server gives op's client: for a read, the
// znode's data and version once the entry is applied; for a write or a
// cas, whether it succeeded and the version it made.
func applyReg(t *datatree.Tree, op regOp, e *txn.Entry) regOutput {
	res, _ := t.Apply(e)
	if op.Op == "read" {
		data, st, code := t.GetData(e.Op.Path, nil)
		return regOutput{Value: string(data), Version: st.Version, OK: code == zkproto.OK}
	}
	return regOutput{OK: res.Err == zkproto.OK, Version: res.Stat.Version}
}

// The specification the checkers hold the answers to: one register per
// key, a value and a version.

// input is op as the specification takes it.
func (op regOp) input() regInput {
	return regInput{Op: op.Op, Key: op.Key, Value: op.Value, Expect: op.Expect}
}

type regInput struct {
	Op, Key, Value string
	Expect         int32
}

type regOutput struct {
	Value   string
	Version int32
	OK      bool
	Unknown bool
}

type regState struct {
	value   string
	version int32
}

// step is what applying in to st must answer, and the state after.
func (st regState) step(in regInput) (regState, regOutput) {
	switch in.Op {
	case "read":
		return st, regOutput{Value: st.value, Version: st.version, OK: true}
	case "write":
		return regState{in.Value, st.version + 1}, regOutput{Version: st.version + 1, OK: true}
	case "cas":
		if st.version == in.Expect {
			return regState{in.Value, st.version + 1}, regOutput{Version: st.version + 1, OK: true}
		}
		return st, regOutput{}
	}
	return st, regOutput{Unknown: true}
}

// regModel is the porcupine model of the registers, partitioned by key.
var regModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(regInput).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		slices.Sort(keys)
		var out [][]porcupine.Operation
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() any { return regState{} },
	Step: func(state, input, output any) (bool, any) {
		in, out := input.(regInput), output.(regOutput)
		if in.Op != "read" && in.Op != "write" && in.Op != "cas" {
			return false, state
		}
		next, want := state.(regState).step(in)
		return out.Unknown || out == want, next
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(regInput), output.(regOutput)
		return fmt.Sprintf("%s(%s,%q,v%d) -> %q v%d ok=%v unknown=%v", in.Op, in.Key, in.Value, in.Expect, out.Value, out.Version, out.OK, out.Unknown)
	},
}
