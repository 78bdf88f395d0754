package txn

import (
	"errors"
	"fmt"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// FormatVersion is the first byte of every encoded entry. A change to the
// encoding gets a new version; Unmarshal rejects versions it does not know.
const FormatVersion byte = 1

// ErrMalformed is wrapped by every error Unmarshal returns.
var ErrMalformed = errors.New("txn: malformed entry")

// MaxNesting bounds how deep Ops may nest. The data tree accepts only single
// ops inside a multi (depth 1); the encoding allows more so that whatever a
// proposer logged can be read back and rejected by Apply rather than make
// the log unreadable, and the bound keeps recursion on hostile input finite.
const MaxNesting = 8

// Presence bits. A field is encoded only when its bit is set, and a bit is
// set exactly when the field is non-zero (non-nil for slices), which makes
// the encoding both compact and canonical.
const (
	entryAuth uint32 = 1 << iota
	entryTimeout
	entryPasswd
	entryAll = entryAuth | entryTimeout | entryPasswd
)

const (
	opOpCode uint32 = 1 << iota
	opPath
	opData
	opACL
	opFlags
	opTTL
	opVersion
	opOps
	opAll = opOpCode | opPath | opData | opACL | opFlags | opTTL | opVersion | opOps
)

// Marshal appends the encoding of e to buf and returns the extended slice:
// the format version byte, then zxid, time and session, then the optional
// fields and the op, all in jute's big-endian encoding. Every op must have a
// valid Kind and Ops nested at most MaxNesting deep, or Unmarshal will refuse
// the result.
func (e *Entry) Marshal(buf []byte) []byte {
	buf = append(buf, FormatVersion)
	enc := zkproto.NewEncoder(buf)
	enc.Long(e.Zxid)
	enc.Long(e.Time)
	enc.Long(e.Session)
	var mask uint32
	if e.Auth != nil {
		mask |= entryAuth
	}
	if e.Timeout != 0 {
		mask |= entryTimeout
	}
	if e.Passwd != nil {
		mask |= entryPasswd
	}
	enc.Int(int32(mask))
	if mask&entryAuth != 0 {
		enc.Int(int32(len(e.Auth)))
		for i := range e.Auth {
			e.Auth[i].Encode(enc)
		}
	}
	if mask&entryTimeout != 0 {
		enc.Int(e.Timeout)
	}
	if mask&entryPasswd != 0 {
		enc.Buffer(e.Passwd)
	}
	marshalOp(enc, &e.Op)
	return enc.Bytes()
}

func marshalOp(enc *zkproto.Encoder, o *Op) {
	var mask uint32
	if o.OpCode != 0 {
		mask |= opOpCode
	}
	if o.Path != "" {
		mask |= opPath
	}
	if o.Data != nil {
		mask |= opData
	}
	if o.ACL != nil {
		mask |= opACL
	}
	if o.Flags != 0 {
		mask |= opFlags
	}
	if o.TTL != 0 {
		mask |= opTTL
	}
	if o.Version != 0 {
		mask |= opVersion
	}
	if o.Ops != nil {
		mask |= opOps
	}
	// Kind in the low byte, presence bits above it.
	enc.Int(int32(uint32(o.Kind) | mask<<8))
	if mask&opOpCode != 0 {
		enc.Int(int32(o.OpCode))
	}
	if mask&opPath != 0 {
		enc.String(o.Path)
	}
	if mask&opData != 0 {
		enc.Buffer(o.Data)
	}
	if mask&opACL != 0 {
		zkproto.EncodeACLs(enc, o.ACL)
	}
	if mask&opFlags != 0 {
		enc.Int(o.Flags)
	}
	if mask&opTTL != 0 {
		enc.Long(o.TTL)
	}
	if mask&opVersion != 0 {
		enc.Int(o.Version)
	}
	if mask&opOps != 0 {
		enc.Int(int32(len(o.Ops)))
		for i := range o.Ops {
			marshalOp(enc, &o.Ops[i])
		}
	}
}

// Unmarshal decodes an entry encoded by Marshal. It rejects an unknown
// version or kind, a presence bit for a zero (or null) value, unknown
// presence bits, ops nested deeper than MaxNesting, and truncated or trailing
// bytes. Marshal of the result decodes to an equal entry. The entry does not
// alias b.
func Unmarshal(b []byte) (*Entry, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if b[0] != FormatVersion {
		return nil, fmt.Errorf("%w: unknown format version %d", ErrMalformed, b[0])
	}
	d := zkproto.NewDecoder(b[1:])
	e := &Entry{}
	e.Zxid = d.Long()
	e.Time = d.Long()
	e.Session = d.Long()
	mask := uint32(d.Int())
	if mask&^entryAll != 0 {
		return nil, fmt.Errorf("%w: unknown entry fields %#x", ErrMalformed, mask&^entryAll)
	}
	if mask&entryAuth != 0 {
		// An id is at least two empty strings: 8 bytes.
		n, ok := d.VectorLen(8)
		if !ok && d.Err() == nil {
			return nil, fmt.Errorf("%w: null auth list encoded", ErrMalformed)
		}
		e.Auth = make([]zkproto.Id, n)
		for i := range e.Auth {
			_ = e.Auth[i].Decode(d)
		}
	}
	if mask&entryTimeout != 0 {
		if e.Timeout = d.Int(); e.Timeout == 0 && d.Err() == nil {
			return nil, fmt.Errorf("%w: zero timeout encoded", ErrMalformed)
		}
	}
	if mask&entryPasswd != 0 {
		if e.Passwd = d.Buffer(); e.Passwd == nil && d.Err() == nil {
			return nil, fmt.Errorf("%w: null password encoded", ErrMalformed)
		}
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if err := unmarshalOp(d, &e.Op, 0); err != nil {
		return nil, err
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if d.Remaining() != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, d.Remaining())
	}
	return e, nil
}

// minOpBytes is the smallest encoded op: the kind and presence word.
const minOpBytes = 4

func unmarshalOp(d *zkproto.Decoder, o *Op, depth int) error {
	head := uint32(d.Int())
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	o.Kind = Kind(head & 0xff)
	mask := head >> 8
	if !o.Kind.Valid() {
		return fmt.Errorf("%w: unknown kind %d", ErrMalformed, head&0xff)
	}
	if mask&^opAll != 0 {
		return fmt.Errorf("%w: unknown op fields %#x", ErrMalformed, mask&^opAll)
	}
	zero := func(name string) error { return fmt.Errorf("%w: zero %s encoded", ErrMalformed, name) }
	if mask&opOpCode != 0 {
		if o.OpCode = zkproto.OpCode(d.Int()); o.OpCode == 0 && d.Err() == nil {
			return zero("opcode")
		}
	}
	if mask&opPath != 0 {
		if o.Path = d.String(); o.Path == "" && d.Err() == nil {
			return zero("path")
		}
	}
	if mask&opData != 0 {
		if o.Data = d.Buffer(); o.Data == nil && d.Err() == nil {
			return zero("data")
		}
	}
	if mask&opACL != 0 {
		if o.ACL = zkproto.DecodeACLs(d); o.ACL == nil && d.Err() == nil {
			return zero("acl")
		}
	}
	if mask&opFlags != 0 {
		if o.Flags = d.Int(); o.Flags == 0 && d.Err() == nil {
			return zero("flags")
		}
	}
	if mask&opTTL != 0 {
		if o.TTL = d.Long(); o.TTL == 0 && d.Err() == nil {
			return zero("ttl")
		}
	}
	if mask&opVersion != 0 {
		if o.Version = d.Int(); o.Version == 0 && d.Err() == nil {
			return zero("version")
		}
	}
	if mask&opOps != 0 {
		if depth >= MaxNesting {
			return fmt.Errorf("%w: ops nested deeper than %d", ErrMalformed, MaxNesting)
		}
		n, ok := d.VectorLen(minOpBytes)
		if !ok {
			if err := d.Err(); err != nil {
				return fmt.Errorf("%w: %v", ErrMalformed, err)
			}
			return zero("op list")
		}
		o.Ops = make([]Op, n)
		for i := range o.Ops {
			if err := unmarshalOp(d, &o.Ops[i], depth+1); err != nil {
				return err
			}
		}
	}
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return nil
}
