package zkproto

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// requestSamples pairs every client opcode that has a body with a sample
// body; DecodeRequest must return exactly that record.
func requestSamples() []struct {
	op  OpCode
	rec Record
} {
	recs := sampleRecords()
	return []struct {
		op  OpCode
		rec Record
	}{
		{OpCreate, recs["CreateRequest"]},
		{OpCreate2, recs["CreateRequest"]},
		{OpCreateContainer, &CreateRequest{Path: "/c", ACL: OpenACLUnsafe, Flags: ModeContainer}},
		{OpCreateTTL, recs["CreateTTL"]},
		{OpDelete, recs["DeleteRequest"]},
		{OpExists, recs["ExistsRequest"]},
		{OpGetData, recs["GetDataRequest"]},
		{OpSetData, recs["SetDataRequest"]},
		{OpGetACL, recs["GetACLRequest"]},
		{OpSetACL, recs["SetACLRequest"]},
		{OpGetChildren, recs["GetChildren"]},
		{OpGetChildren2, recs["GetChildren2"]},
		{OpSync, recs["SyncRequest"]},
		{OpCheck, recs["CheckVersion"]},
		{OpMulti, recs["MultiRequest"]},
		{OpMultiRead, recs["MultiReadRequest"]},
		{OpReconfig, recs["Reconfig"]},
		{OpCheckWatches, recs["CheckWatches"]},
		{OpRemoveWatches, recs["RemoveWatches"]},
		{OpAuth, recs["AuthPacket"]},
		{OpSetWatches, recs["SetWatches"]},
		{OpSetWatches2, recs["SetWatches2"]},
		{OpSASL, recs["SASLRequest"]},
		{OpGetEphemerals, recs["EphemeralsReq"]},
		{OpGetAllChildrenNumber, recs["AllChildrenReq"]},
		{OpAddWatch, recs["AddWatch"]},
	}
}

func TestDecodeRequestEveryOpcode(t *testing.T) {
	for _, c := range requestSamples() {
		b := encode(c.rec)
		got, err := DecodeRequest(c.op, NewDecoder(b))
		if err != nil {
			t.Errorf("%s: %v", c.op, err)
			continue
		}
		if !reflect.DeepEqual(got, c.rec) {
			t.Errorf("%s: decoded %T %+v, want %T %+v", c.op, got, got, c.rec, c.rec)
		}
		for n := 0; n < len(b); n++ {
			if r, err := DecodeRequest(c.op, NewDecoder(b[:n])); err == nil {
				t.Errorf("%s: %d/%d bytes decoded to %+v", c.op, n, len(b), r)
			}
		}
	}
}

// TestDecodeRequestCoversOpcodes checks that every known opcode is either
// a request with a body, one without, or one no client may send, so a new
// opcode cannot be forgotten.
func TestDecodeRequestCoversOpcodes(t *testing.T) {
	withBody := map[OpCode]bool{}
	for _, c := range requestSamples() {
		withBody[c.op] = true
	}
	noBody := map[OpCode]bool{OpPing: true, OpCloseSession: true, OpWhoAmI: true}
	notClient := map[OpCode]bool{OpNotification: true, OpCreateSession: true, OpDeleteContainer: true, OpError: true}
	for op := range opNames {
		rec, err := DecodeRequest(op, NewDecoder(nil))
		switch {
		case noBody[op]:
			if rec != nil || err != nil {
				t.Errorf("%s: got %v, %v; want nil, nil", op, rec, err)
			}
		case notClient[op]:
			if err == nil {
				t.Errorf("%s: a non-client opcode was accepted", op)
			}
		case !withBody[op]:
			t.Errorf("%s: opcode has no test sample", op)
		}
	}
	for _, op := range []OpCode{10, 23, 99, 108, -2, -12, 1 << 30} {
		if _, err := DecodeRequest(op, NewDecoder(make([]byte, 64))); err == nil {
			t.Errorf("unknown opcode %d decoded", int32(op))
		}
	}
}

func TestDecodeRequestMultiKind(t *testing.T) {
	writes := encode(&MultiRequest{Ops: []MultiOp{{Op: OpDelete, Req: &DeleteRequest{Path: "/a"}}}})
	reads := encode(&MultiRequest{Ops: []MultiOp{{Op: OpGetData, Req: &GetDataRequest{Path: "/a"}}}})
	empty := encode(&MultiRequest{})
	cases := []struct {
		op OpCode
		b  []byte
		ok bool
	}{
		{OpMulti, writes, true},
		{OpMulti, reads, false},
		{OpMultiRead, reads, true},
		{OpMultiRead, writes, false},
		{OpMulti, empty, true},
		{OpMultiRead, empty, true},
	}
	for _, c := range cases {
		_, err := DecodeRequest(c.op, NewDecoder(c.b))
		if (err == nil) != c.ok {
			t.Errorf("%s of %x: err = %v", c.op, c.b, err)
		}
	}
}

// TestDecodeRequestIgnoresTrailingBytes matches ZooKeeper, which reads the
// record it expects and ignores the rest of the frame.
func TestDecodeRequestIgnoresTrailingBytes(t *testing.T) {
	b := append(encode(&DeleteRequest{Path: "/a", Version: 1}), 1, 2, 3)
	r, err := DecodeRequest(OpDelete, NewDecoder(b))
	if err != nil || !reflect.DeepEqual(r, &DeleteRequest{Path: "/a", Version: 1}) {
		t.Fatalf("got %+v, %v", r, err)
	}
}

// TestDecodeRequestHugeCount checks that a vector count the frame cannot
// hold is refused before anything is allocated for it.
func TestDecodeRequestHugeCount(t *testing.T) {
	e := NewEncoder(nil)
	e.String("/a")
	e.Buffer(nil)
	e.Int(1 << 30) // ACL count
	b := e.Bytes()
	if _, err := DecodeRequest(OpCreate, NewDecoder(b)); err == nil {
		t.Fatal("create with a huge ACL count decoded")
	}
	allocs := testing.AllocsPerRun(100, func() { _, _ = DecodeRequest(OpCreate, NewDecoder(b)) })
	if allocs > 8 {
		t.Fatalf("rejecting a huge count took %v allocations", allocs)
	}
}

// TestDecodeRequestAllocs guards the hot path: a getData request costs the
// decoder, the record and its path string.
func TestDecodeRequestAllocs(t *testing.T) {
	b := encode(&GetDataRequest{Path: "/some/znode", Watch: true})
	allocs := testing.AllocsPerRun(1000, func() {
		d := NewDecoder(b)
		if _, err := DecodeRequest(OpGetData, d); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Fatalf("DecodeRequest(getData) = %v allocations, want <= 3", allocs)
	}
}

func TestEncodeReplyAndRequestFrames(t *testing.T) {
	prefix := []byte("xyz") // frames append to what is already there
	got := EncodeReply(append([]byte(nil), prefix...), ReplyHeader{Xid: 5, Zxid: 7}, &SyncResponse{Path: "/"})
	want := hexBytes(t, "78797a", "00000015", "00000005 0000000000000007 00000000", "00000001 2f")
	if !bytes.Equal(got, want) {
		t.Errorf("reply frame:\n got  %x\n want %x", got, want)
	}
	// An error reply is a bare header, even when a body is passed.
	got = EncodeReply(nil, ReplyHeader{Xid: 5, Zxid: 7, Err: ErrNoNode}, &SyncResponse{Path: "/"})
	want = hexBytes(t, "00000010", "00000005 0000000000000007 ffffff9b")
	if !bytes.Equal(got, want) {
		t.Errorf("error reply frame:\n got  %x\n want %x", got, want)
	}
	got = EncodeRequest(nil, RequestHeader{Xid: XidPing, Op: OpPing}, nil)
	want = hexBytes(t, "00000008", "fffffffe 0000000b")
	if !bytes.Equal(got, want) {
		t.Errorf("ping frame:\n got  %x\n want %x", got, want)
	}
	got = EncodeRequest(nil, RequestHeader{Xid: 1, Op: OpExists}, &ExistsRequest{Path: "/a", Watch: true})
	want = hexBytes(t, "0000000f", "00000001 00000003", "00000002 2f61 01")
	if !bytes.Equal(got, want) {
		t.Errorf("exists frame:\n got  %x\n want %x", got, want)
	}
	got = AppendFrame(nil, &ConnectRequest{TimeOut: 4000, Passwd: []byte{}})
	want = hexBytes(t, "0000001c", "00000000 0000000000000000 00000fa0 0000000000000000 00000000")
	if !bytes.Equal(got, want) {
		t.Errorf("handshake frame:\n got  %x\n want %x", got, want)
	}
}

// TestFramesReadBack writes a session's worth of frames into one buffer
// and reads them back with ReadFrame and the decoders, as server and client
// do.
func TestFramesReadBack(t *testing.T) {
	var stream []byte
	stream = AppendFrame(stream, &ConnectRequest{TimeOut: 30000, Passwd: make([]byte, 16), HasReadOnly: true})
	for _, c := range requestSamples() {
		stream = EncodeRequest(stream, RequestHeader{Xid: Xid(c.op), Op: c.op}, c.rec)
	}
	r := bufio.NewReader(bytes.NewReader(stream))
	frame, err := ReadFrame(r, nil, DefaultMaxPacket)
	if err != nil {
		t.Fatal(err)
	}
	var cr ConnectRequest
	if err := cr.Decode(NewDecoder(frame)); err != nil || !cr.HasReadOnly || cr.TimeOut != 30000 {
		t.Fatalf("handshake: %+v, %v", cr, err)
	}
	buf := make([]byte, 0, 64)
	for _, c := range requestSamples() {
		frame, err := ReadFrame(r, buf, DefaultMaxPacket)
		if err != nil {
			t.Fatalf("%s: %v", c.op, err)
		}
		d := NewDecoder(frame)
		var h RequestHeader
		if err := h.Decode(d); err != nil || h.Op != c.op || h.Xid != Xid(c.op) {
			t.Fatalf("%s: header %+v, %v", c.op, h, err)
		}
		rec, err := DecodeRequest(h.Op, d)
		if err != nil || !reflect.DeepEqual(rec, c.rec) || d.Remaining() != 0 {
			t.Fatalf("%s: %+v, %v, %d bytes left", c.op, rec, err, d.Remaining())
		}
	}
}

// TestEncodeReplyAllocs guards the reply hot path: appending to a buffer
// with room costs at most the Encoder, which escapes because the body is
// encoded through the Record interface.
func TestEncodeReplyAllocs(t *testing.T) {
	buf := make([]byte, 0, 512)
	body := &GetDataResponse{Data: []byte("value"), Stat: testStat}
	allocs := testing.AllocsPerRun(1000, func() {
		buf = EncodeReply(buf[:0], ReplyHeader{Xid: 1, Zxid: 2}, body)
	})
	if allocs > 1 {
		t.Fatalf("EncodeReply = %v allocations, want <= 1", allocs)
	}
}

// TestDecodeRequestErrorWrapsCause checks that the opcode context added to
// a decoding error keeps the cause visible to errors.Is.
func TestDecodeRequestErrorWrapsCause(t *testing.T) {
	b := encode(&GetDataRequest{Path: "/a"})
	_, err := DecodeRequest(OpGetData, NewDecoder(b[:len(b)-1]))
	if !errors.Is(err, ErrShortBuffer) {
		t.Fatalf("got %v, want an error wrapping ErrShortBuffer", err)
	}
}
