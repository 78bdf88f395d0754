package zkproto

import (
	"encoding/binary"
	"fmt"
)

// DecodeRequest decodes the body of a request of type op, returning a
// pointer to the record that goes with op (see the table in anchors A.1).
// Requests without a body (ping, closeSession, whoAmI) return nil, nil.
// Opcodes that no client may send (notification, createSession,
// deleteContainer, error, unknown numbers) and bodies that do not decode
// are errors. Trailing bytes after the body are ignored, as ZooKeeper
// ignores them.
//
// A multi must hold only writes and a multiRead only reads: ZooKeeper
// answers either mistake with MARSHALLINGERROR, which is what a server
// should reply to any error from here.
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
		return nil, fmt.Errorf("zkproto: no client request has opcode %s", op)
	}
	if err := r.Decode(d); err != nil {
		return nil, fmt.Errorf("%w (in a %s request)", err, op)
	}
	if m, ok := r.(*MultiRequest); ok && len(m.Ops) > 0 && m.IsRead() != (op == OpMultiRead) {
		return nil, fmt.Errorf("zkproto: %s may not contain %s", op, m.Ops[0].Op)
	}
	return r, nil
}

// EncodeReply appends one complete reply frame to buf: the length prefix,
// the header, and the body unless the header carries an error or body is
// nil (ZooKeeper sends a failed reply as a bare header).
func EncodeReply(buf []byte, h ReplyHeader, body Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	h.Encode(&e)
	if h.Err == OK && body != nil {
		body.Encode(&e)
	}
	return patchLength(e.buf, start)
}

// EncodeRequest appends one complete request frame to buf: the length
// prefix, the header and the body (if any).
func EncodeRequest(buf []byte, h RequestHeader, body Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	h.Encode(&e)
	if body != nil {
		body.Encode(&e)
	}
	return patchLength(e.buf, start)
}

// AppendFrame appends rec as one frame without a header: the form of the
// handshake (ConnectRequest and ConnectResponse).
func AppendFrame(buf []byte, rec Record) []byte {
	start := len(buf)
	e := Encoder{buf: append(buf, 0, 0, 0, 0)}
	rec.Encode(&e)
	return patchLength(e.buf, start)
}

// patchLength writes the length of the frame that starts at b[start] into
// its 4-byte prefix, which was reserved before the payload was appended.
func patchLength(b []byte, start int) []byte {
	binary.BigEndian.PutUint32(b[start:], uint32(len(b)-start-4))
	return b
}
