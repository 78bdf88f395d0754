package transport

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// randMessage returns a message with every field drawn at random, empty
// slices left nil (Decode's normal form). Values are spread over every
// varint length.
func randMessage(r *rand.Rand) gpaxos.Message {
	u64 := func() uint64 { return r.Uint64() >> r.UintN(64) }
	ids := func() []quorum.ID {
		n := r.IntN(4)
		if n == 0 {
			return nil
		}
		v := make([]quorum.ID, n)
		for i := range v {
			v[i] = quorum.ID(u64())
		}
		return v
	}
	data := func() []byte {
		n := r.IntN(40)
		if n == 0 {
			return nil
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.UintN(256))
		}
		return b
	}
	m := gpaxos.Message{
		Type:       gpaxos.MsgType(1 + r.UintN(uint(lastMsgType))),
		From:       quorum.ID(u64()),
		To:         quorum.ID(u64()),
		Epoch:      gpaxos.Epoch(u64()),
		Leader:     quorum.ID(u64()),
		Coord:      quorum.ID(u64()),
		Group:      int(int64(u64())) * (1 - 2*r.IntN(2)),
		GroupEpoch: u64(),
		Prev:       gpaxos.Zxid(u64()),
		Commit:     gpaxos.Zxid(u64()),
		Zxid:       gpaxos.Zxid(u64()),
		Current:    gpaxos.Epoch(u64()),
		Holder:     quorum.ID(u64()),
		Down:       ids(),
		GCs:        ids(),
		Reject:     r.IntN(2) == 1,
		Conf:       r.Uint64(),
		Promisers:  ids(),
		Inc:        r.Uint64(),
		Replaces:   u64(),
		Members:    ids(),
		Last:       gpaxos.Zxid(u64()),
	}
	if n := r.IntN(4); n > 0 {
		m.PromiserIncs = make([]uint64, n)
		for i := range m.PromiserIncs {
			m.PromiserIncs[i] = r.Uint64()
		}
	}
	if n := r.IntN(5); n > 0 {
		m.Entries = make([]gpaxos.Entry, n)
		for i := range m.Entries {
			m.Entries[i] = gpaxos.Entry{Zxid: gpaxos.Zxid(u64()), Type: gpaxos.EntryType(r.UintN(256)), Data: data()}
		}
	}
	if r.IntN(3) == 0 {
		s := &gpaxos.Snapshot{Index: gpaxos.Zxid(u64()), Data: data()}
		if n := r.IntN(4); n > 0 {
			s.Voters.Groups = make([][]quorum.ID, n)
			for i := range s.Voters.Groups {
				s.Voters.Groups[i] = ids()
			}
			if r.IntN(2) == 0 {
				s.Voters.Incarnations = map[quorum.ID]uint64{quorum.ID(u64()): r.Uint64()}
			}
		}
		m.Snapshot = s
	}
	return m
}

// TestCodecRoundTripProperty checks Decode(Encode(m)) == m and the exactness
// of EncodedSize over random messages.
func TestCodecRoundTripProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		m := randMessage(r)
		b := Encode(&m)
		if len(b) != EncodedSize(&m) {
			t.Fatalf("#%d: EncodedSize %d, encoding has %d bytes", i, EncodedSize(&m), len(b))
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatalf("#%d: Decode: %v\nmessage %+v", i, err, m)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("#%d: round trip changed the message\n got %+v\nwant %+v", i, got, m)
		}
	}
}

// TestCodecExtremes round-trips boundary values of every field.
func TestCodecExtremes(t *testing.T) {
	for _, m := range []gpaxos.Message{
		{Type: gpaxos.MsgProp},
		{Type: lastMsgType, From: math.MaxUint64, To: math.MaxUint64, Epoch: math.MaxUint32,
			Group: math.MinInt, GroupEpoch: math.MaxUint64, Current: math.MaxUint32, Reject: true},
		{Type: gpaxos.MsgSync, Group: math.MaxInt, Snapshot: &gpaxos.Snapshot{}},
		{Type: gpaxos.MsgSync, Snapshot: &gpaxos.Snapshot{Voters: quorum.Config{Groups: [][]quorum.ID{nil, {1, 2, 3}, nil}}}},
		{Type: gpaxos.MsgAppend, Entries: []gpaxos.Entry{{}, {Zxid: 1, Type: gpaxos.EntryConfChange, Data: []byte{0}}}},
	} {
		got, err := Decode(Encode(&m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Errorf("round trip of %+v: got %+v, %v", m, got, err)
		}
	}
}

// TestLastMsgTypeIsLast fails when gpaxos gains a message type that the
// codec would reject: lastMsgType must then be raised.
func TestLastMsgTypeIsLast(t *testing.T) {
	if s := (lastMsgType + 1).String(); s != "?" {
		t.Fatalf("gpaxos has a message type %q after %v; raise lastMsgType", s, lastMsgType)
	}
	if s := lastMsgType.String(); s == "?" {
		t.Fatalf("lastMsgType %d is not a gpaxos message type", lastMsgType)
	}
}

func TestDecodeRejects(t *testing.T) {
	valid := Encode(&gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Entries: []gpaxos.Entry{{Zxid: 5, Data: []byte("abc")}},
		Snapshot: &gpaxos.Snapshot{Voters: quorum.Config{Groups: [][]quorum.ID{{1}}}, Data: []byte("s")}, Down: []quorum.ID{3}})
	// Offset of the bytes after the fixed prefix (version, type, From..Prev
	// are all one-byte values here): the entry count.
	const entryCount = 10
	if valid[entryCount] != 1 {
		t.Fatalf("layout assumption broken: % x", valid)
	}
	with := func(i int, v ...byte) []byte {
		b := append([]byte(nil), valid[:i]...)
		return append(b, v...)
	}
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"version only", []byte{CodecVersion}},
		{"bad version", append([]byte{CodecVersion + 1}, valid[1:]...)},
		{"type zero", with(1, append([]byte{0}, valid[2:]...)...)},
		{"unknown type", with(1, append([]byte{byte(lastMsgType) + 1}, valid[2:]...)...)},
		{"trailing byte", append(append([]byte(nil), valid...), 0)},
		{"member count larger than input", append(append([]byte(nil), valid[:len(valid)-2]...), 2)},
		{"varint overflow", with(2, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
		{"epoch over 32 bits", with(4, 0x80, 0x80, 0x80, 0x80, 0x10)},
		{"entry count larger than input", with(entryCount, 0xff, 0xff, 0xff, 0xff, 0x0f)},
		{"data length larger than input", with(entryCount+3, 0xff, 0x7f)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Decode(tt.in); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode(% x) = %v, want ErrMalformed", tt.in, err)
			}
		})
	}
	// Every strict prefix of a valid encoding is truncated.
	for i := range valid {
		if _, err := Decode(valid[:i]); !errors.Is(err, ErrMalformed) {
			t.Fatalf("prefix of %d bytes decoded: %v", i, err)
		}
	}
}

// TestDecodeAliasesInput documents that Data fields share the input buffer.
func TestDecodeAliasesInput(t *testing.T) {
	b := Encode(&gpaxos.Message{Type: gpaxos.MsgAppend, Entries: []gpaxos.Entry{{Data: []byte("x")}}})
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(b, 'x')
	b[i] = 'y'
	if string(m.Entries[0].Data) != "y" {
		t.Fatalf("Data does not alias the input")
	}
	if cap(m.Entries[0].Data) != 1 {
		t.Fatalf("Data capacity %d leaks the rest of the frame to appends", cap(m.Entries[0].Data))
	}
}

func FuzzRoundTrip(f *testing.F) {
	for s := range uint64(8) {
		f.Add(s, s*31)
	}
	f.Fuzz(func(t *testing.T, s1, s2 uint64) {
		m := randMessage(rand.New(rand.NewPCG(s1, s2)))
		b := Encode(&m)
		if len(b) != EncodedSize(&m) {
			t.Fatalf("EncodedSize %d, encoding %d", EncodedSize(&m), len(b))
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("round trip changed the message\n got %+v\nwant %+v", got, m)
		}
	})
}

// FuzzDecode feeds arbitrary bytes to Decode: it must not panic, and what it
// accepts must survive a round trip.
func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		m := randMessage(r)
		f.Add(Encode(&m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		again, err := Decode(Encode(&m))
		if err != nil {
			t.Fatalf("re-encoding of an accepted message does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("round trip changed the message\n got %+v\nwant %+v", again, m)
		}
	})
}
