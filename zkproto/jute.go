package zkproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrShortBuffer is reported when a record needs more bytes than remain.
var ErrShortBuffer = errors.New("zkproto: record truncated")

// Encoder appends jute-encoded values (big-endian; length-prefixed buffers
// and strings; -1 for null) to a byte slice.
type Encoder struct {
	buf []byte
}

// NewEncoder returns an encoder that appends to buf (which may be nil).
func NewEncoder(buf []byte) *Encoder { return &Encoder{buf: buf} }

// Bytes returns the encoded bytes.
func (e *Encoder) Bytes() []byte { return e.buf }

// Len returns the number of bytes encoded so far.
func (e *Encoder) Len() int { return len(e.buf) }

// Reset empties the encoder, keeping its storage.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

// Int writes a 4-byte integer.
func (e *Encoder) Int(v int32) { e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v)) }

// Long writes an 8-byte integer.
func (e *Encoder) Long(v int64) { e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v)) }

// Bool writes a 1-byte boolean.
func (e *Encoder) Bool(v bool) {
	if v {
		e.buf = append(e.buf, 1)
	} else {
		e.buf = append(e.buf, 0)
	}
}

// Buffer writes a length-prefixed byte buffer; nil is written as length -1.
func (e *Encoder) Buffer(v []byte) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	e.buf = append(e.buf, v...)
}

// String writes a length-prefixed UTF-8 string.
func (e *Encoder) String(v string) {
	e.Int(int32(len(v)))
	e.buf = append(e.buf, v...)
}

// Strings writes a vector of strings; nil is written as the null vector.
func (e *Encoder) Strings(v []string) {
	if v == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(v)))
	for _, s := range v {
		e.String(s)
	}
}

// Decoder reads jute-encoded values from a byte slice. The first error
// sticks: later reads return zero values, and Err reports it, so a record
// decoder can read all its fields and check once.
type Decoder struct {
	buf []byte
	off int
	err error
}

// NewDecoder returns a decoder over buf.
func NewDecoder(buf []byte) *Decoder { return &Decoder{buf: buf} }

// Err returns the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Remaining returns the number of unread bytes.
func (d *Decoder) Remaining() int { return len(d.buf) - d.off }

// Offset returns the number of bytes read so far.
func (d *Decoder) Offset() int { return d.off }

// Fail records err as the decoder's error if none is recorded yet.
func (d *Decoder) Fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *Decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.buf)-d.off {
		d.err = ErrShortBuffer
		return nil
	}
	b := d.buf[d.off : d.off+n]
	d.off += n
	return b
}

// Int reads a 4-byte integer.
func (d *Decoder) Int() int32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

// Long reads an 8-byte integer.
func (d *Decoder) Long() int64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

// Bool reads a 1-byte boolean; any non-zero byte is true, as in Java.
func (d *Decoder) Bool() bool {
	b := d.take(1)
	return b != nil && b[0] != 0
}

// Buffer reads a length-prefixed buffer. A null buffer (-1) decodes as nil;
// any other negative length is an error. The result is a copy, so it may
// outlive the decoder's input.
func (d *Decoder) Buffer() []byte {
	n := d.Int()
	if d.err != nil || n == -1 {
		return nil
	}
	if n < -1 {
		d.Fail(fmt.Errorf("zkproto: negative buffer length %d", n))
		return nil
	}
	b := d.take(int(n))
	if b == nil {
		return nil
	}
	out := make([]byte, len(b))
	copy(out, b)
	return out
}

// String reads a length-prefixed string; a null string decodes as "".
func (d *Decoder) String() string {
	n := d.Int()
	if d.err != nil || n == -1 {
		return ""
	}
	if n < -1 {
		d.Fail(fmt.Errorf("zkproto: negative string length %d", n))
		return ""
	}
	b := d.take(int(n))
	return string(b)
}

// VectorLen reads a vector count. It returns ok=false for a null vector or
// an error. minElem is the smallest encoded size of one element; a count that
// cannot fit in the remaining bytes is rejected before anything is allocated.
func (d *Decoder) VectorLen(minElem int) (n int, ok bool) {
	c := d.Int()
	if d.err != nil || c == -1 {
		return 0, false
	}
	if c < 0 || (minElem > 0 && int64(c)*int64(minElem) > int64(d.Remaining())) || int64(c) > math.MaxInt32 {
		d.Fail(fmt.Errorf("zkproto: bad vector length %d", c))
		return 0, false
	}
	return int(c), true
}

// Strings reads a vector of strings; a null vector decodes as nil.
func (d *Decoder) Strings() []string {
	n, ok := d.VectorLen(4)
	if !ok {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.String()
	}
	if d.err != nil {
		return nil
	}
	return out
}
