package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// CodecVersion is the first byte of every encoded message. A receiver
// rejects other versions rather than guess at their layout; a change of
// layout bumps it, and so does a change of what the entries it carries
// mean to the members that apply them (version 4: the server's touch
// entries list sessions in a new encoding, which a member of an earlier
// build would ignore, expiring sessions that are alive), so that members
// of such builds never form an ensemble.
const CodecVersion byte = 5

// lastMsgType is the highest message type Decode accepts. Types beyond it
// are rejected so that a garbled type byte is caught at the edge instead of
// inside the node; adding a gpaxos message type means raising this (a test
// fails until then).
const lastMsgType = gpaxos.MsgEarlyReply

// Decoding errors. Every error Decode returns wraps ErrMalformed.
var (
	// ErrMalformed is wrapped by every decoding error.
	ErrMalformed = errors.New("transport: malformed message")
	errTruncated = fmt.Errorf("%w: truncated", ErrMalformed)
)

// EncodedSize returns the exact number of bytes Encode produces for m,
// so that callers can check budgets before allocating.
func EncodedSize(m *gpaxos.Message) int {
	n := 1 + 1 // version, type
	n += uvarintLen(uint64(m.From)) + uvarintLen(uint64(m.To))
	n += uvarintLen(uint64(m.Epoch)) + uvarintLen(uint64(m.Leader)) + uvarintLen(uint64(m.Coord))
	n += varintLen(int64(m.Group)) + uvarintLen(m.GroupEpoch) + uvarintLen(uint64(m.Prev))
	n += uvarintLen(uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		n += uvarintLen(uint64(e.Zxid)) + 1 + bytesLen(e.Data)
	}
	n += uvarintLen(uint64(m.Commit)) + uvarintLen(uint64(m.Zxid))
	n += uvarintLen(uint64(m.Current)) + uvarintLen(uint64(m.Holder))
	n++ // snapshot presence
	if s := m.Snapshot; s != nil {
		n += uvarintLen(uint64(s.Index)) + bytesLen(gpaxos.EncodeConfig(s.Voters))
		n += bytesLen(s.Data)
	}
	n += idsLen(m.Down) + idsLen(m.GCs)
	n++ // reject
	n += 8 + idsLen(m.Promisers)
	n += 8 + 8 + uvarintLen(uint64(len(m.PromiserIncs))) + 8*len(m.PromiserIncs)
	n += idsLen(m.Members)
	n += uvarintLen(uint64(m.Last))
	return n
}

// Encode returns the binary encoding of m. It never fails: every field of
// a Message has an encoding.
func Encode(m *gpaxos.Message) []byte {
	return AppendEncode(make([]byte, 0, EncodedSize(m)), m)
}

// AppendEncode appends the encoding of m to b and returns the extended slice.
func AppendEncode(b []byte, m *gpaxos.Message) []byte {
	b = appendHead(b, m)
	if m.Snapshot != nil {
		b = append(b, m.Snapshot.Data...)
	}
	return appendTail(b, m)
}

// appendHead appends the encoding of m up to its snapshot's data, length
// prefix included; appendTail appends what follows the data. The bulk lane
// sends a snapshot from these two pieces and the data itself, without
// copying the data into one buffer.
func appendHead(b []byte, m *gpaxos.Message) []byte {
	b = append(b, CodecVersion, byte(m.Type))
	b = binary.AppendUvarint(b, uint64(m.From))
	b = binary.AppendUvarint(b, uint64(m.To))
	b = binary.AppendUvarint(b, uint64(m.Epoch))
	b = binary.AppendUvarint(b, uint64(m.Leader))
	b = binary.AppendUvarint(b, uint64(m.Coord))
	b = binary.AppendVarint(b, int64(m.Group))
	b = binary.AppendUvarint(b, m.GroupEpoch)
	b = binary.AppendUvarint(b, uint64(m.Prev))
	b = binary.AppendUvarint(b, uint64(len(m.Entries)))
	for i := range m.Entries {
		e := &m.Entries[i]
		b = binary.AppendUvarint(b, uint64(e.Zxid))
		b = append(b, byte(e.Type))
		b = appendBytes(b, e.Data)
	}
	b = binary.AppendUvarint(b, uint64(m.Commit))
	b = binary.AppendUvarint(b, uint64(m.Zxid))
	b = binary.AppendUvarint(b, uint64(m.Current))
	b = binary.AppendUvarint(b, uint64(m.Holder))
	if s := m.Snapshot; s != nil {
		b = append(b, 1)
		b = binary.AppendUvarint(b, uint64(s.Index))
		b = appendBytes(b, gpaxos.EncodeConfig(s.Voters))
		b = binary.AppendUvarint(b, uint64(len(s.Data)))
	} else {
		b = append(b, 0)
	}
	return b
}

func appendTail(b []byte, m *gpaxos.Message) []byte {
	b = appendIDs(b, m.Down)
	b = appendIDs(b, m.GCs)
	if m.Reject {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, m.Conf)
	b = appendIDs(b, m.Promisers)
	b = binary.LittleEndian.AppendUint64(b, m.Inc)
	b = binary.LittleEndian.AppendUint64(b, m.Replaces)
	b = binary.AppendUvarint(b, uint64(len(m.PromiserIncs)))
	for _, inc := range m.PromiserIncs {
		b = binary.LittleEndian.AppendUint64(b, inc)
	}
	b = appendIDs(b, m.Members)
	b = binary.AppendUvarint(b, uint64(m.Last))
	return b
}

// Decode parses one message encoded by Encode. It rejects unknown versions
// and message types, truncated input, counts that the input cannot hold,
// values out of their field's range and trailing bytes, and never panics.
//
// Empty slices decode as nil. The Data of entries and of the snapshot alias
// b: the caller hands b over and must not modify it afterwards (the
// transport reads every frame into a fresh buffer, so this saves copying
// snapshots that may be hundreds of megabytes).
func Decode(b []byte) (gpaxos.Message, error) {
	d := decoder{b: b}
	var m gpaxos.Message
	if v := d.byte(); d.err == nil && v != CodecVersion {
		return m, fmt.Errorf("%w: codec version %d, want %d", ErrMalformed, v, CodecVersion)
	}
	m.Type = gpaxos.MsgType(d.byte())
	if d.err == nil && (m.Type == 0 || m.Type > lastMsgType) {
		return m, fmt.Errorf("%w: unknown message type %d", ErrMalformed, m.Type)
	}
	m.From = quorum.ID(d.uvarint())
	m.To = quorum.ID(d.uvarint())
	m.Epoch = gpaxos.Epoch(d.uint32("epoch"))
	m.Leader = quorum.ID(d.uvarint())
	m.Coord = quorum.ID(d.uvarint())
	m.Group = d.int("group")
	m.GroupEpoch = d.uvarint()
	m.Prev = gpaxos.Zxid(d.uvarint())
	// Every entry takes at least 3 bytes (zxid, type, data length).
	if n := d.count(3, "entries"); n > 0 {
		m.Entries = make([]gpaxos.Entry, n)
		for i := range m.Entries {
			e := &m.Entries[i]
			e.Zxid = gpaxos.Zxid(d.uvarint())
			e.Type = gpaxos.EntryType(d.byte())
			e.Data = d.bytes()
		}
	}
	m.Commit = gpaxos.Zxid(d.uvarint())
	m.Zxid = gpaxos.Zxid(d.uvarint())
	m.Current = gpaxos.Epoch(d.uint32("current"))
	m.Holder = quorum.ID(d.uvarint())
	if d.bool("snapshot flag") {
		s := &gpaxos.Snapshot{Index: gpaxos.Zxid(d.uvarint())}
		if cb := d.bytes(); d.err == nil {
			v, err := gpaxos.DecodeConfig(cb)
			if err != nil {
				d.fail(fmt.Errorf("%w: snapshot configuration: %v", ErrMalformed, err))
			}
			s.Voters = v
		}
		s.Data = d.bytes()
		m.Snapshot = s
	}
	m.Down = d.ids("down")
	m.GCs = d.ids("gcs")
	m.Reject = d.bool("reject")
	m.Conf = d.uint64()
	m.Promisers = d.ids("promisers")
	m.Inc = d.uint64()
	m.Replaces = d.uint64()
	if n := d.count(8, "promiser incarnations"); n > 0 {
		m.PromiserIncs = make([]uint64, n)
		for i := range m.PromiserIncs {
			m.PromiserIncs[i] = d.uint64()
		}
	}
	m.Members = d.ids("members")
	m.Last = gpaxos.Zxid(d.uvarint())
	if d.err != nil {
		return gpaxos.Message{}, d.err
	}
	if len(d.b) != 0 {
		return gpaxos.Message{}, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(d.b))
	}
	return m, nil
}

// decoder consumes b with a sticky error: after the first failure every
// read returns a zero value, so Decode checks the error once at the end and
// never indexes past the input.
type decoder struct {
	b   []byte
	err error
}

// uint64 reads a fixed 8-byte little-endian value (hashes, which varints
// would not shorten).
func (d *decoder) uint64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail(errTruncated)
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(errTruncated)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) bool(what string) bool {
	switch v := d.byte(); v {
	case 0:
		return false
	case 1:
		return true
	default:
		// Only 0 and 1 are valid so that every message has one encoding.
		d.fail(fmt.Errorf("%w: %s is %d, want 0 or 1", ErrMalformed, what, v))
		return false
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		if n == 0 {
			d.fail(errTruncated)
		} else {
			d.fail(fmt.Errorf("%w: varint overflows 64 bits", ErrMalformed))
		}
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uint32(what string) uint32 {
	v := d.uvarint()
	if v > math.MaxUint32 {
		d.fail(fmt.Errorf("%w: %s %d overflows 32 bits", ErrMalformed, what, v))
		return 0
	}
	return uint32(v)
}

func (d *decoder) int(what string) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		if n == 0 {
			d.fail(errTruncated)
		} else {
			d.fail(fmt.Errorf("%w: varint overflows 64 bits", ErrMalformed))
		}
		return 0
	}
	d.b = d.b[n:]
	if v < math.MinInt || v > math.MaxInt {
		d.fail(fmt.Errorf("%w: %s %d overflows int", ErrMalformed, what, v))
		return 0
	}
	return int(v)
}

// count reads an element count and checks that the rest of the input can
// hold that many elements of at least minSize bytes each, so that a forged
// count cannot make Decode allocate more than the frame it was given.
func (d *decoder) count(minSize int, what string) int {
	v := d.uvarint()
	if d.err != nil {
		return 0
	}
	if v > uint64(len(d.b)/minSize) {
		d.fail(fmt.Errorf("%w: %d %s do not fit in %d bytes", ErrMalformed, v, what, len(d.b)))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.count(1, "data bytes")
	if n == 0 {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) ids(what string) []quorum.ID {
	n := d.count(1, what)
	if n == 0 {
		return nil
	}
	ids := make([]quorum.ID, n)
	for i := range ids {
		ids[i] = quorum.ID(d.uvarint())
	}
	return ids
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

func appendIDs(b []byte, ids []quorum.ID) []byte {
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(id))
	}
	return b
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func varintLen(v int64) int {
	// Zigzag, as binary.AppendVarint does.
	return uvarintLen(uint64(v<<1) ^ uint64(v>>63))
}

func bytesLen(v []byte) int { return uvarintLen(uint64(len(v))) + len(v) }

func idsLen(ids []quorum.ID) int {
	n := uvarintLen(uint64(len(ids)))
	for _, id := range ids {
		n += uvarintLen(uint64(id))
	}
	return n
}
