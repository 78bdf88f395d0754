package zkproto

import "fmt"

// DecodeRequest decodes the body of a request of type op. Requests without
// a body (ping, closeSession, whoAmI) return nil, nil. Unknown opcodes and
// bodies that do not decode are errors; trailing bytes are ignored, as
// ZooKeeper ignores them.
func DecodeRequest(op OpCode, d *Decoder) (Record, error) {
	var r Record
	switch op {
	case OpPing, OpCloseSession, OpWhoAmI:
		return nil, nil
	case OpCreate, OpCreate2, OpCreateContainer:
		r = &CreateRequest{}
	case OpCreateTTL:
		r = &CreateTTLRequest{}
	case OpDelete:
		r = &DeleteRequest{}
	case OpExists:
		r = &ExistsRequest{}
	case OpGetData:
		r = &GetDataRequest{}
	case OpSetData:
		r = &SetDataRequest{}
	case OpGetACL:
		r = &GetACLRequest{}
	case OpSetACL:
		r = &SetACLRequest{}
	case OpGetChildren:
		r = &GetChildrenRequest{}
	case OpGetChildren2:
		r = &GetChildren2Request{}
	case OpSync:
		r = &SyncRequest{}
	case OpCheck:
		r = &CheckVersionRequest{}
	case OpMulti, OpMultiRead:
		r = &MultiRequest{}
	case OpReconfig:
		r = &ReconfigRequest{}
	case OpCheckWatches:
		r = &CheckWatchesRequest{}
	case OpRemoveWatches:
		r = &RemoveWatchesRequest{}
	case OpAuth:
		r = &AuthPacket{}
	case OpSetWatches:
		r = &SetWatches{}
	case OpSetWatches2:
		r = &SetWatches2{}
	case OpSASL:
		r = &GetSASLRequest{}
	case OpGetEphemerals:
		r = &GetEphemeralsRequest{}
	case OpGetAllChildrenNumber:
		r = &GetAllChildrenNumberRequest{}
	case OpAddWatch:
		r = &AddWatchRequest{}
	default:
		return nil, fmt.Errorf("zkproto: no request body for opcode %s", op)
	}
	if err := r.Decode(d); err != nil {
		return nil, err
	}
	if m, ok := r.(*MultiRequest); ok {
		if err := checkMultiKind(op, m); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// checkMultiKind rejects a multi that mixes reads into writes or a
// multiRead with writes (MultiOperationRecord's op-kind check).
func checkMultiKind(op OpCode, m *MultiRequest) error {
	for _, o := range m.Ops {
		read := o.Op == OpGetData || o.Op == OpGetChildren
		if read != (op == OpMultiRead) {
			return fmt.Errorf("zkproto: %s may not contain %s", op, o.Op)
		}
	}
	return nil
}

// EncodeReply appends one complete reply frame: length, header, and body
// unless the header carries an error or body is nil.
func EncodeReply(buf []byte, h ReplyHeader, body Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	h.Encode(&e)
	if h.Err == OK && body != nil {
		body.Encode(&e)
	}
	return patchLength(e.buf, start)
}

// EncodeRequest appends one complete request frame: length, header, body.
func EncodeRequest(buf []byte, h RequestHeader, body Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	h.Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	return patchLength(e.buf, start)
}

// AppendFrame appends rec as one frame without a header (the handshake).
func AppendFrame(buf []byte, rec Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	rec.Encode(&e)
	return patchLength(e.buf, start)
}

// patchLength writes the frame length into the 4 bytes at start.
func patchLength(b []byte, start int) []byte {
	n := len(b) - start - 4
	b[start], b[start+1], b[start+2], b[start+3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}
