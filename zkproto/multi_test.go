package zkproto

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

const multiEndHex = "ffffffff 01 ffffffff" // MultiHeader{-1, true, -1}

var zeroStatHex = strings.Repeat("00", 68)

// TestMultiGolden builds a multi request and response by hand from
// MultiOperationRecord and MultiResponse: (header, record) pairs and the
// {-1, true, -1} terminator.
func TestMultiGolden(t *testing.T) {
	req := &MultiRequest{Ops: []MultiOp{
		{Op: OpCreate, Req: &CreateRequest{Path: "/a", Data: []byte("x"), ACL: OpenACLUnsafe}},
		{Op: OpCheck, Req: &CheckVersionRequest{Path: "/a", Version: 0}},
	}}
	reqHex := []string{
		"00000001 00 ffffffff", // create, not done, err -1
		"00000002 2f61 00000001 78 00000001 0000001f 00000005 776f726c64 00000006 616e796f6e65 00000000",
		"0000000d 00 ffffffff", // check
		"00000002 2f61 00000000",
		multiEndHex,
	}
	if got, want := encode(req), hexBytes(t, reqHex...); !bytes.Equal(got, want) {
		t.Errorf("multi request:\n got  %x\n want %x", got, want)
	}
	var back MultiRequest
	if err := back.Decode(NewDecoder(hexBytes(t, reqHex...))); err != nil || !reflect.DeepEqual(&back, req) {
		t.Errorf("multi request decoded to %+v, %v", back, err)
	}

	resp := &MultiResponse{Results: []MultiResult{
		{Op: OpCreate, Resp: &CreateResponse{Path: "/a"}},
		{Op: OpCreateTTL, Resp: &Create2Response{Path: "/t"}},
		{Op: OpDelete},
		{Op: OpError, Err: ErrNoNode, Resp: &ErrorResponse{Err: ErrNoNode}},
	}}
	respHex := []string{
		"00000001 00 00000000", "00000002 2f61", // create: CreateResponse
		"0000000f 00 00000000", "00000002 2f74", zeroStatHex, // createTTL goes out as create2
		"00000002 00 00000000",             // delete: no body
		"ffffffff 00 ffffff9b", "ffffff9b", // error: header err and ErrorResponse
		multiEndHex,
	}
	if got, want := encode(resp), hexBytes(t, respHex...); !bytes.Equal(got, want) {
		t.Errorf("multi response:\n got  %x\n want %x", got, want)
	}
	var rback MultiResponse
	if err := rback.Decode(NewDecoder(hexBytes(t, respHex...))); err != nil {
		t.Fatalf("multi response: %v", err)
	}
	wantBack := []MultiResult{
		{Op: OpCreate, Resp: &CreateResponse{Path: "/a"}},
		{Op: OpCreate2, Resp: &Create2Response{Path: "/t"}},
		{Op: OpDelete},
		{Op: OpError, Err: ErrNoNode, Resp: &ErrorResponse{Err: ErrNoNode}},
	}
	if !reflect.DeepEqual(rback.Results, wantBack) {
		t.Errorf("multi response decoded to %+v", rback.Results)
	}
}

// TestMultiResponseCanonicalForm covers the encoder's normalizations: the
// header err of a successful result is 0 whatever Err says, an error
// result's code comes from Err even without a Resp, createContainer is sent
// as create2, and a missing Resp is written as the zero record.
func TestMultiResponseCanonicalForm(t *testing.T) {
	resp := &MultiResponse{Results: []MultiResult{
		{Op: OpSetData, Err: ErrBadVersion}, // nil Resp, stray Err
		{Op: OpCreateContainer},
		{Op: OpError, Err: ErrRuntimeInconsistency},
	}}
	want := hexBytes(t,
		"00000005 00 00000000", zeroStatHex,
		"0000000f 00 00000000", "00000000", zeroStatHex,
		"ffffffff 00 fffffffe", "fffffffe",
		multiEndHex)
	if got := encode(resp); !bytes.Equal(got, want) {
		t.Errorf("\n got  %x\n want %x", got, want)
	}
}

// TestMultiRequestNilReq checks that an op without a record is written as
// the zero record of its type, keeping the frame decodable.
func TestMultiRequestNilReq(t *testing.T) {
	b := encode(&MultiRequest{Ops: []MultiOp{{Op: OpDelete}, {Op: OpCreateTTL}}})
	var back MultiRequest
	if err := back.Decode(NewDecoder(b)); err != nil {
		t.Fatal(err)
	}
	want := []MultiOp{{Op: OpDelete, Req: &DeleteRequest{}}, {Op: OpCreateTTL, Req: &CreateTTLRequest{}}}
	if !reflect.DeepEqual(back.Ops, want) {
		t.Fatalf("got %+v", back.Ops)
	}
}

func TestMultiRequestRejects(t *testing.T) {
	header := func(op OpCode) string { return hex.EncodeToString(encode(&MultiHeader{Type: op, Err: -1})) }
	del := "00000002 2f61 ffffffff"
	get := "00000002 2f61 00"
	cases := []struct {
		name string
		hex  []string
	}{
		{"sync op", []string{header(OpSync), "00000002 2f61", multiEndHex}},
		{"nested multi", []string{header(OpMulti), multiEndHex, multiEndHex}},
		{"error type without done", []string{header(OpError), multiEndHex}},
		{"getACL op", []string{header(OpGetACL), "00000002 2f61", multiEndHex}},
		{"write then read", []string{header(OpDelete), del, header(OpGetData), get, multiEndHex}},
		{"read then write", []string{header(OpGetChildren), get, header(OpDelete), del, multiEndHex}},
		{"no terminator", []string{header(OpDelete), del}},
		{"empty input", nil},
	}
	for _, c := range cases {
		var r MultiRequest
		if err := r.Decode(NewDecoder(hexBytes(t, c.hex...))); err == nil {
			t.Errorf("%s: decoded to %+v", c.name, r.Ops)
		}
	}
}

func TestMultiResponseRejects(t *testing.T) {
	// MultiResponse.deserialize knows create and create2 only: a server that
	// sent createTTL or createContainer types would break Java clients.
	for _, op := range []OpCode{OpCreateTTL, OpCreateContainer, OpSync, OpMulti, OpSetACL, OpCode(99)} {
		b := hexBytes(t, hex.EncodeToString(encode(&MultiHeader{Type: op})), "00000002 2f61", zeroStatHex, multiEndHex)
		var r MultiResponse
		if err := r.Decode(NewDecoder(b)); err == nil {
			t.Errorf("result type %s decoded to %+v", op, r.Results)
		}
	}
}

// TestMultiDoneEndsList checks ZooKeeper's rule that any header with done
// set ends the list, whatever its type and err.
func TestMultiDoneEndsList(t *testing.T) {
	b := hexBytes(t, "0000000d 00 ffffffff", "00000002 2f61 00000000", "00000001 01 00000000", "deadbeef")
	var r MultiRequest
	d := NewDecoder(b)
	if err := r.Decode(d); err != nil || len(r.Ops) != 1 || d.Remaining() != 4 {
		t.Fatalf("got %d ops, %d bytes left, %v", len(r.Ops), d.Remaining(), err)
	}
}

// TestMultiOpCountBounded decodes a frame of many minimal ops: the count
// is what the bytes hold (at most len/9), and a frame cut anywhere fails.
func TestMultiOpCountBounded(t *testing.T) {
	const n = 5000
	one := hexBytes(t, "0000000d 00 ffffffff", "00000000 00000000") // check("", 0): 17 bytes
	var b []byte
	for i := 0; i < n; i++ {
		b = append(b, one...)
	}
	b = append(b, hexBytes(t, multiEndHex)...)
	var r MultiRequest
	if err := r.Decode(NewDecoder(b)); err != nil || len(r.Ops) != n || len(r.Ops) > len(b)/9 {
		t.Fatalf("decoded %d ops from %d bytes, %v", len(r.Ops), len(b), err)
	}
	if err := r.Decode(NewDecoder(b[:len(b)-1])); err == nil {
		t.Fatal("a multi without its full terminator decoded")
	}
}

func TestMultiRequestIsRead(t *testing.T) {
	recs := sampleRecords()
	if recs["MultiRequest"].(*MultiRequest).IsRead() {
		t.Error("a multi of writes reports IsRead")
	}
	if !recs["MultiReadRequest"].(*MultiRequest).IsRead() {
		t.Error("a multi of reads does not report IsRead")
	}
	if (&MultiRequest{}).IsRead() {
		t.Error("an empty multi reports IsRead")
	}
}
