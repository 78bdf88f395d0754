package sim

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/anishathalye/porcupine"
)

// kvOp is a client operation on the replicated key-value register, as it
// travels inside an entry's payload.
type kvOp struct {
	Client int
	Seq    int
	Op     string // read | write | cas
	Key    string
	Value  string
	Expect string
}

// encode packs op into a payload; fields never contain the separator because
// the workload generates them.
func (op kvOp) encode() []byte {
	return []byte(strings.Join([]string{strconv.Itoa(op.Client), strconv.Itoa(op.Seq), op.Op, op.Key, op.Value, op.Expect}, "\x00"))
}

// decodeOp parses a payload; ok is false for anything else.
func decodeOp(b []byte) (kvOp, bool) {
	f := bytes.Split(b, []byte{0})
	if len(f) != 6 {
		return kvOp{}, false
	}
	c, err1 := strconv.Atoi(string(f[0]))
	s, err2 := strconv.Atoi(string(f[1]))
	if err1 != nil || err2 != nil {
		return kvOp{}, false
	}
	return kvOp{Client: c, Seq: s, Op: string(f[2]), Key: string(f[3]), Value: string(f[4]), Expect: string(f[5])}, true
}

// kvResult is what applying an operation returned.
type kvResult struct {
	Value string // read: the value seen
	OK    bool   // cas: whether it wrote; write and read: true
}

// kvStore is the replicated state machine: registers applied in commit
// order.
//
// With once set it also applies each operation (client, seq) at most once,
// ignoring later copies: gpaxos forwards a proposal as a message, and a
// network that duplicates the message has the leader append it twice.
// Production servers admit each proposal once (internal/replica's
// sequencer); the simulated workload has no such layer, so its state
// machine does the same at apply time, which every server does alike. Only
// runs that duplicate messages set it, so the snapshots of the others keep
// their contents (and their runs their schedules).
type kvStore struct {
	vals map[string]string
	once map[opID]bool // applied operations, when applying at most once
}

// opID names one client operation.
type opID struct{ client, seq int }

func newKV(once bool) kvStore {
	s := kvStore{vals: map[string]string{}}
	if once {
		s.once = map[opID]bool{}
	}
	return s
}

// apply applies op; applied is false for a copy of an operation already
// applied (only when applying at most once), which changes nothing.
func (s kvStore) apply(op kvOp) (res kvResult, applied bool) {
	if s.once != nil {
		id := opID{op.Client, op.Seq}
		if s.once[id] {
			return kvResult{}, false
		}
		s.once[id] = true
	}
	switch op.Op {
	case "read":
		return kvResult{Value: s.vals[op.Key], OK: true}, true
	case "write":
		s.vals[op.Key] = op.Value
		return kvResult{OK: true}, true
	case "cas":
		if s.vals[op.Key] == op.Expect {
			s.vals[op.Key] = op.Value
			return kvResult{OK: true}, true
		}
		return kvResult{OK: false}, true
	}
	return kvResult{}, true
}

// onceMark starts the snapshot keys that record applied operations; the
// workload's keys never start with it.
const onceMark = "\x01"

// snapshot encodes the store deterministically (sorted keys), the applied
// operations (when applying at most once) as keys of their own.
func (s kvStore) snapshot() []byte {
	keys := make([]string, 0, len(s.vals)+len(s.once))
	vals := make(map[string]string, len(s.vals)+len(s.once))
	for k, v := range s.vals {
		keys = append(keys, k)
		vals[k] = v
	}
	for id := range s.once {
		k := fmt.Sprintf("%s%d.%d", onceMark, id.client, id.seq)
		keys = append(keys, k)
		vals[k] = ""
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\x00%s\x00", k, vals[k])
	}
	return b.Bytes()
}

// restoreKV decodes a snapshot; once says whether the store applies
// operations at most once.
func restoreKV(data []byte, once bool) kvStore {
	s := newKV(once)
	f := bytes.Split(data, []byte{0})
	for i := 0; i+1 < len(f); i += 2 {
		k := string(f[i])
		if rest, ok := strings.CutPrefix(k, onceMark); ok {
			var id opID
			if _, err := fmt.Sscanf(rest, "%d.%d", &id.client, &id.seq); err == nil && s.once != nil {
				s.once[id] = true
			}
			continue
		}
		s.vals[k] = string(f[i+1])
	}
	return s
}

// porcupine model of one register per key.

type kvInput struct{ Op, Key, Value, Expect string }
type kvOutput struct {
	Value   string
	OK      bool
	Unknown bool
}

var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(kvInput).Key
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
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		st, in, out := state.(string), input.(kvInput), output.(kvOutput)
		switch in.Op {
		case "read":
			return out.Unknown || out.Value == st, st
		case "write":
			return true, in.Value
		case "cas":
			if st == in.Expect {
				return out.Unknown || out.OK, in.Value
			}
			return out.Unknown || !out.OK, st
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(kvInput), output.(kvOutput)
		return fmt.Sprintf("%s(%s,%q,%q) -> %q ok=%v unknown=%v", in.Op, in.Key, in.Value, in.Expect, out.Value, out.OK, out.Unknown)
	},
}
