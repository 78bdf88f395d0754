package txn

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// sampleEntries covers every kind and every optional field, including the
// nil-versus-empty distinctions the encoding must keep.
func sampleEntries() []*Entry {
	digest := zkproto.Id{Scheme: "digest", ID: "alice:ZbYTEt4ZsaSAJrWmS1tnqdhNhEk="}
	return []*Entry{
		{Zxid: 1, Time: 1700000000000, Session: 0x1000001, Timeout: 30000,
			Passwd: bytes.Repeat([]byte{7}, 16), Op: Op{Kind: KindCreateSession}},
		{Zxid: 2, Time: 1700000000001, Session: 0x1000001, Auth: []zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}, digest},
			Op: Op{Kind: KindCreate, OpCode: zkproto.OpCreate2, Path: "/app/lock-", Data: []byte("hello"),
				ACL: zkproto.OpenACLUnsafe, Flags: zkproto.ModeEphemeralSequential}},
		{Zxid: 3, Session: 9, Op: Op{Kind: KindCreate, OpCode: zkproto.OpCreateTTL, Path: "/ttl",
			Data: []byte{}, ACL: []zkproto.ACL{}, Flags: zkproto.ModePersistentWithTTL, TTL: 5000}},
		{Zxid: 4, Session: 9, Auth: []zkproto.Id{}, Op: Op{Kind: KindDelete, OpCode: zkproto.OpDelete, Path: "/a", Version: -1}},
		{Zxid: 5, Session: 9, Op: Op{Kind: KindSetData, OpCode: zkproto.OpSetData, Path: "/a", Data: make([]byte, 1024), Version: 3}},
		{Zxid: 6, Session: 9, Op: Op{Kind: KindSetACL, OpCode: zkproto.OpSetACL, Path: "/a",
			ACL: []zkproto.ACL{{Perms: zkproto.PermRead, ID: digest}}, Version: 0}},
		{Zxid: 7, Session: 9, Op: Op{Kind: KindMulti, OpCode: zkproto.OpMulti, Ops: []Op{
			{Kind: KindCheck, OpCode: zkproto.OpCheck, Path: "/a", Version: 2},
			{Kind: KindCreate, OpCode: zkproto.OpCreate, Path: "/a/b", ACL: zkproto.OpenACLUnsafe},
			{Kind: KindDelete, OpCode: zkproto.OpDelete, Path: "/a/c", Version: -1},
		}}},
		{Zxid: 8, Session: 9, Op: Op{Kind: KindMulti, OpCode: zkproto.OpMulti, Ops: []Op{}}},
		{Zxid: 9, Session: 9, Op: Op{Kind: KindCloseSession}},
		{Zxid: 10, Time: -1, Op: Op{Kind: KindDeleteContainer, Path: "/c"}},
		{Zxid: -1 << 63, Time: 1<<63 - 1, Session: -1, Op: Op{Kind: KindNoop}},
		{Zxid: 11, Time: 12, Op: Op{Kind: KindNamespaces, Data: []byte(`{"1":"strong","2":"weak"}`)}},
	}
}

func TestRoundTrip(t *testing.T) {
	for _, e := range sampleEntries() {
		b := e.Marshal(nil)
		if b[0] != FormatVersion {
			t.Fatalf("entry %d: first byte %d, want the format version", e.Zxid, b[0])
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("entry %d: Unmarshal: %v", e.Zxid, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("entry %d: round trip\n got %+v\nwant %+v", e.Zxid, got, e)
		}
		// Marshal appends: a prefix in buf must be kept.
		pre := []byte("prefix")
		if b2 := e.Marshal(pre); !bytes.Equal(b2[:len(pre)], pre) || !bytes.Equal(b2[len(pre):], b) {
			t.Fatalf("entry %d: Marshal does not append", e.Zxid)
		}
	}
}

func TestUnmarshalDoesNotAlias(t *testing.T) {
	e := sampleEntries()[1]
	b := e.Marshal(nil)
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range b {
		b[i] = 0xAA
	}
	if string(got.Op.Data) != "hello" || got.Op.Path != "/app/lock-" {
		t.Fatalf("decoded entry changed with its input: %+v", got.Op)
	}
}

func TestUnmarshalRejectsEveryTruncation(t *testing.T) {
	for _, e := range sampleEntries() {
		b := e.Marshal(nil)
		for n := 0; n < len(b); n++ {
			if _, err := Unmarshal(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("entry %d cut to %d of %d bytes: err = %v, want ErrMalformed", e.Zxid, n, len(b), err)
			}
		}
	}
}

func TestUnmarshalRejects(t *testing.T) {
	base := (&Entry{Zxid: 1, Op: Op{Kind: KindNoop}}).Marshal(nil)
	// The layout of base: version, zxid(8), time(8), session(8), mask(4), op head(4).
	const maskOff, opOff = 25, 29
	patch := func(off int, v ...byte) []byte {
		b := append([]byte(nil), base...)
		copy(b[off:], v)
		return b
	}
	nested := Op{Kind: KindMulti}
	for i := 0; i < MaxNesting; i++ {
		nested = Op{Kind: KindMulti, Ops: []Op{nested}}
	}
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"unknown version", patch(0, 2)},
		{"trailing byte", append(append([]byte(nil), base...), 0)},
		{"unknown entry field", patch(maskOff, 0, 0, 0, 8)},
		{"kind zero", patch(opOff+3, 0)},
		{"unknown kind", patch(opOff+3, 12)},
		{"unknown op field", patch(opOff, 1)},
		{"null auth", append(patch(maskOff+3, 1)[:opOff], append([]byte{0xff, 0xff, 0xff, 0xff}, base[opOff:]...)...)},
		{"zero timeout", append(patch(maskOff+3, 2)[:opOff], append([]byte{0, 0, 0, 0}, base[opOff:]...)...)},
		{"null password", append(patch(maskOff+3, 4)[:opOff], append([]byte{0xff, 0xff, 0xff, 0xff}, base[opOff:]...)...)},
		{"zero version field", append(patch(opOff+1, 0, 0x40), 0, 0, 0, 0)},
		{"null data", append(patch(opOff+2, 0x04), 0xff, 0xff, 0xff, 0xff)},
		{"null acl", append(patch(opOff+2, 0x08), 0xff, 0xff, 0xff, 0xff)},
		{"huge acl count", append(patch(opOff+2, 0x08), 0x7f, 0xff, 0xff, 0xff)},
		{"huge op count", append(patch(opOff+2, 0x80), 0x7f, 0xff, 0xff, 0xff)},
		{"negative path length", append(patch(opOff+2, 0x02), 0xff, 0xff, 0xff, 0xfe)},
		{"too deep", (&Entry{Op: Op{Kind: KindMulti, Ops: []Op{nested}}}).Marshal(nil)},
	}
	for _, tc := range tests {
		if e, err := Unmarshal(tc.b); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: Unmarshal = %+v, %v; want ErrMalformed", tc.name, e, err)
		}
	}
	// The deepest legal nesting still decodes.
	ok := &Entry{Op: nested}
	if _, err := Unmarshal(ok.Marshal(nil)); err != nil {
		t.Errorf("nesting %d deep: %v", MaxNesting, err)
	}
}

func TestKindString(t *testing.T) {
	for k := KindCreate; k <= KindNamespaces; k++ {
		if !k.Valid() || k.String() == "" || k.String()[0] == 'k' {
			t.Errorf("kind %d: Valid=%v String=%q", k, k.Valid(), k.String())
		}
	}
	if Kind(0).Valid() || Kind(12).Valid() || Kind(0).String() != "kind(0)" {
		t.Errorf("invalid kinds: %v %v %q", Kind(0).Valid(), Kind(12).Valid(), Kind(0).String())
	}
}

func BenchmarkMarshalSetData1KiB(b *testing.B) {
	e := &Entry{Zxid: 1, Time: 2, Session: 3, Op: Op{Kind: KindSetData, OpCode: zkproto.OpSetData,
		Path: "/bench/node-0000000001", Data: make([]byte, 1024), Version: -1}}
	buf := make([]byte, 0, 2048)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.Marshal(buf[:0])
	}
}

func BenchmarkUnmarshalSetData1KiB(b *testing.B) {
	e := &Entry{Zxid: 1, Time: 2, Session: 3, Op: Op{Kind: KindSetData, OpCode: zkproto.OpSetData,
		Path: "/bench/node-0000000001", Data: make([]byte, 1024), Version: -1}}
	buf := e.Marshal(nil)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(buf); err != nil {
			b.Fatal(err)
		}
	}
}
