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

// kvStore is the replicated state machine: a map applied in commit order.
type kvStore map[string]string

func (s kvStore) apply(op kvOp) kvResult {
	switch op.Op {
	case "read":
		return kvResult{Value: s[op.Key], OK: true}
	case "write":
		s[op.Key] = op.Value
		return kvResult{OK: true}
	case "cas":
		if s[op.Key] == op.Expect {
			s[op.Key] = op.Value
			return kvResult{OK: true}
		}
		return kvResult{OK: false}
	}
	return kvResult{}
}

// snapshot encodes the store deterministically (sorted keys).
func (s kvStore) snapshot() []byte {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&b, "%s\x00%s\x00", k, s[k])
	}
	return b.Bytes()
}

func restoreKV(data []byte) kvStore {
	s := kvStore{}
	f := bytes.Split(data, []byte{0})
	for i := 0; i+1 < len(f); i += 2 {
		s[string(f[i])] = string(f[i+1])
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
