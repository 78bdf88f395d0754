package zkproto

import (
	"errors"
	"strings"
	"testing"
)

// TestOpCodeNumbers pins every opcode to ZooDefs.OpCode (anchors A.1): a
// renumbering would silently break every client.
func TestOpCodeNumbers(t *testing.T) {
	want := map[string]int32{
		"notification": 0, "create": 1, "delete": 2, "exists": 3, "getData": 4, "setData": 5,
		"getACL": 6, "setACL": 7, "getChildren": 8, "sync": 9, "ping": 11, "getChildren2": 12,
		"check": 13, "multi": 14, "create2": 15, "reconfig": 16, "checkWatches": 17,
		"removeWatches": 18, "createContainer": 19, "deleteContainer": 20, "createTTL": 21,
		"multiRead": 22, "auth": 100, "setWatches": 101, "sasl": 102, "getEphemerals": 103,
		"getAllChildrenNumber": 104, "setWatches2": 105, "addWatch": 106, "whoAmI": 107,
		"createSession": -10, "closeSession": -11, "error": -1,
	}
	if len(opNames) != len(want) {
		t.Errorf("%d opcodes named, want %d", len(opNames), len(want))
	}
	for name, n := range want {
		op := OpCode(n)
		if op.String() != name || !op.Known() {
			t.Errorf("opcode %d: String %q Known %v, want %q", n, op.String(), op.Known(), name)
		}
	}
	if OpCode(10).Known() || OpCode(10).String() != "op(10)" {
		t.Errorf("opcode 10: %q", OpCode(10).String())
	}
}

// TestCodeNumbers pins the error codes to KeeperException.Code (anchors A.2).
func TestCodeNumbers(t *testing.T) {
	want := map[Code]int32{
		OK: 0, ErrSystemError: -1, ErrRuntimeInconsistency: -2, ErrDataInconsistency: -3,
		ErrConnectionLoss: -4, ErrMarshallingError: -5, ErrUnimplemented: -6, ErrOperationTimeout: -7,
		ErrBadArguments: -8, ErrUnknownSession: -12, ErrNewConfigNoQuorum: -13, ErrReconfigInProgress: -14,
		ErrAPIError: -100, ErrNoNode: -101, ErrNoAuth: -102, ErrBadVersion: -103,
		ErrNoChildrenForEphemerals: -108, ErrNodeExists: -110, ErrNotEmpty: -111,
		ErrSessionExpired: -112, ErrInvalidCallback: -113, ErrInvalidACL: -114, ErrAuthFailed: -115,
		ErrSessionMoved: -118, ErrNotReadOnly: -119, ErrEphemeralOnLocalSession: -120,
		ErrNoWatcher: -121, ErrRequestTimeout: -122, ErrReconfigDisabled: -123,
		ErrSessionClosedRequiresSASL: -124, ErrQuotaExceeded: -125, ErrThrottledOp: -127,
	}
	for c, n := range want {
		if int32(c) != n {
			t.Errorf("%s = %d, want %d", c, int32(c), n)
		}
		if strings.HasPrefix(c.String(), "code(") {
			t.Errorf("code %d has no name", n)
		}
	}
	if len(codeNames) != len(want) {
		t.Errorf("%d codes named, want %d", len(codeNames), len(want))
	}
	if ErrNoNode.Error() != "zookeeper: NONODE" || Code(-9).String() != "code(-9)" {
		t.Errorf("got %q and %q", ErrNoNode.Error(), Code(-9).String())
	}
}

func TestCodeOf(t *testing.T) {
	if CodeOf(nil) != OK || CodeOf(ErrBadVersion) != ErrBadVersion || CodeOf(errors.New("x")) != ErrSystemError {
		t.Fatal("CodeOf maps nil, a Code and another error wrongly")
	}
}

func TestEventTypeString(t *testing.T) {
	if EventNodeChildrenChanged.String() != "NodeChildrenChanged" || EventType(42).String() != "event(42)" {
		t.Fatalf("got %q, %q", EventNodeChildrenChanged.String(), EventType(42).String())
	}
}

// TestDecoderSticky checks the Decoder contract the records rely on: after
// the first error every read returns zero without consuming input, and the
// first error is the one reported.
func TestDecoderSticky(t *testing.T) {
	d := NewDecoder([]byte{0, 0, 0, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	if d.Int() != 7 || d.Offset() != 4 {
		t.Fatal("first int")
	}
	if d.Long() != 0x0102030405060708 || d.Remaining() != 1 {
		t.Fatal("long")
	}
	if d.Int() != 0 || d.Err() != ErrShortBuffer {
		t.Fatalf("short read: err %v", d.Err())
	}
	d.Fail(errors.New("later"))
	if d.Bool() || d.Err() != ErrShortBuffer || d.Remaining() != 1 || d.String() != "" || d.Buffer() != nil {
		t.Fatalf("reads after an error: err %v, %d left", d.Err(), d.Remaining())
	}
}

func TestEncoderReuse(t *testing.T) {
	e := NewEncoder(make([]byte, 0, 16))
	e.Int(1)
	e.Bool(true)
	if e.Len() != 5 {
		t.Fatalf("Len = %d", e.Len())
	}
	e.Reset()
	e.Long(-1)
	if e.Len() != 8 || cap(e.Bytes()) != 16 {
		t.Fatalf("after Reset: %x (cap %d)", e.Bytes(), cap(e.Bytes()))
	}
}

func TestErrorMessages(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&FrameTooLargeError{Len: 2000000, Max: DefaultMaxPacket}, "zkproto: frame length 2000000 outside [0, 1048575]"},
		{ValidatePath("/a//b", false), `zkproto: invalid path "/a//b": empty node name specified @3`},
	}
	for _, c := range cases {
		if c.err.Error() != c.want {
			t.Errorf("got %q, want %q", c.err.Error(), c.want)
		}
	}
}
