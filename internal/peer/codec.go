package peer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// codecVersion is the first byte of every encoded message.
const codecVersion = 1

// Encode appends the binary encoding of m to b.
func Encode(b []byte, m *gpaxos.Message) []byte {
	b = append(b, codecVersion, byte(m.Type))
	u64 := func(v uint64) { b = binary.BigEndian.AppendUint64(b, v) }
	u32 := func(v uint32) { b = binary.BigEndian.AppendUint32(b, v) }
	ids := func(xs []gpaxos.ID) {
		u32(uint32(len(xs)))
		for _, x := range xs {
			u64(uint64(x))
		}
	}
	bytes := func(x []byte) {
		u32(uint32(len(x)))
		b = append(b, x...)
	}
	u64(uint64(m.From))
	u64(uint64(m.To))
	u32(uint32(m.Epoch))
	u64(uint64(m.Leader))
	u64(uint64(m.Coord))
	u32(uint32(int32(m.Group)))
	u64(m.GroupEpoch)
	u64(uint64(m.Prev))
	u64(uint64(m.Commit))
	u64(uint64(m.Zxid))
	u32(uint32(m.Current))
	u64(uint64(m.Holder))
	if m.Reject {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	ids(m.Down)
	ids(m.GCs)
	u32(uint32(len(m.Entries)))
	for _, e := range m.Entries {
		u64(uint64(e.Zxid))
		b = append(b, byte(e.Type))
		bytes(e.Data)
	}
	if m.Snapshot == nil {
		b = append(b, 0)
		return b
	}
	b = append(b, 1)
	u64(uint64(m.Snapshot.Index))
	u32(uint32(len(m.Snapshot.Voters.Groups)))
	for _, g := range m.Snapshot.Voters.Groups {
		ids(g)
	}
	bytes(m.Snapshot.Data)
	return b
}

// errTruncated reports a message shorter than its fields say.
var errTruncated = errors.New("peer: truncated message")

// decoder reads fields with a sticky error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) need(n int) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || len(d.b) < n {
		d.err = errTruncated
		return false
	}
	return true
}

func (d *decoder) u8() byte {
	if !d.need(1) {
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) u32() uint32 {
	if !d.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) u64() uint64 {
	if !d.need(8) {
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

// count reads a length and checks that at least min bytes per element
// remain, so a forged count cannot make the decoder allocate gigabytes.
func (d *decoder) count(min int) int {
	n := d.u32()
	if d.err != nil {
		return 0
	}
	if n > math.MaxInt32 || int(n)*min > len(d.b) {
		d.err = errTruncated
		return 0
	}
	return int(n)
}

// flag reads a boolean byte; anything but 0 or 1 is malformed.
func (d *decoder) flag() bool {
	v := d.u8()
	if v > 1 && d.err == nil {
		d.err = fmt.Errorf("peer: bad flag byte %d", v)
	}
	return v == 1
}

func (d *decoder) ids() []gpaxos.ID {
	n := d.count(8)
	if n == 0 {
		return nil
	}
	out := make([]gpaxos.ID, n)
	for i := range out {
		out[i] = gpaxos.ID(d.u64())
	}
	return out
}

func (d *decoder) bytes() []byte {
	n := d.count(1)
	if n == 0 || !d.need(n) {
		return nil
	}
	v := append([]byte(nil), d.b[:n]...)
	d.b = d.b[n:]
	return v
}

// Decode parses one encoded message. It never panics; a malformed input
// gives an error.
func Decode(b []byte) (gpaxos.Message, error) {
	d := &decoder{b: b}
	var m gpaxos.Message
	if v := d.u8(); d.err == nil && v != codecVersion {
		return m, fmt.Errorf("peer: unknown message version %d", v)
	}
	m.Type = gpaxos.MsgType(d.u8())
	m.From = gpaxos.ID(d.u64())
	m.To = gpaxos.ID(d.u64())
	m.Epoch = gpaxos.Epoch(d.u32())
	m.Leader = gpaxos.ID(d.u64())
	m.Coord = gpaxos.ID(d.u64())
	m.Group = int(int32(d.u32()))
	m.GroupEpoch = d.u64()
	m.Prev = gpaxos.Zxid(d.u64())
	m.Commit = gpaxos.Zxid(d.u64())
	m.Zxid = gpaxos.Zxid(d.u64())
	m.Current = gpaxos.Epoch(d.u32())
	m.Holder = gpaxos.ID(d.u64())
	m.Reject = d.flag()
	m.Down = d.ids()
	m.GCs = d.ids()
	if n := d.count(13); n > 0 {
		m.Entries = make([]gpaxos.Entry, n)
		for i := range m.Entries {
			m.Entries[i] = gpaxos.Entry{Zxid: gpaxos.Zxid(d.u64()), Type: gpaxos.EntryType(d.u8()), Data: d.bytes()}
		}
	}
	if d.flag() {
		s := &gpaxos.Snapshot{Index: gpaxos.Zxid(d.u64())}
		if n := d.count(4); n > 0 {
			s.Voters = quorum.Config{Groups: make([][]quorum.ID, n)}
			for i := range s.Voters.Groups {
				s.Voters.Groups[i] = d.ids()
			}
		}
		s.Data = d.bytes()
		m.Snapshot = s
	}
	if d.err != nil {
		return gpaxos.Message{}, d.err
	}
	if len(d.b) != 0 {
		return gpaxos.Message{}, fmt.Errorf("peer: %d bytes after the message", len(d.b))
	}
	return m, nil
}
