package peer

import (
	"math/rand"
	"reflect"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// randomMessage fills every field of a message, sometimes leaving slices
// empty, so that the round trip covers every branch of the codec.
func randomMessage(r *rand.Rand) gpaxos.Message {
	ids := func() []gpaxos.ID {
		var out []gpaxos.ID
		for i := r.Intn(4); i > 0; i-- {
			out = append(out, gpaxos.ID(r.Uint64()))
		}
		return out
	}
	data := func() []byte {
		if r.Intn(3) == 0 {
			return nil
		}
		b := make([]byte, r.Intn(40)+1)
		r.Read(b)
		return b
	}
	m := gpaxos.Message{Type: gpaxos.MsgType(r.Intn(18)), From: gpaxos.ID(r.Uint64()), To: gpaxos.ID(r.Uint64()),
		Epoch: gpaxos.Epoch(r.Uint32()), Leader: gpaxos.ID(r.Uint64()), Coord: gpaxos.ID(r.Uint64()),
		Group: r.Intn(10) - 1, GroupEpoch: r.Uint64(), Prev: gpaxos.Zxid(r.Uint64()), Commit: gpaxos.Zxid(r.Uint64()),
		Zxid: gpaxos.Zxid(r.Uint64()), Current: gpaxos.Epoch(r.Uint32()), Holder: gpaxos.ID(r.Uint64()),
		Reject: r.Intn(2) == 1, Down: ids(), GCs: ids()}
	for i := r.Intn(4); i > 0; i-- {
		m.Entries = append(m.Entries, gpaxos.Entry{Zxid: gpaxos.Zxid(r.Uint64()), Type: gpaxos.EntryType(r.Intn(3)), Data: data()})
	}
	if r.Intn(2) == 0 {
		s := &gpaxos.Snapshot{Index: gpaxos.Zxid(r.Uint64()), Data: data()}
		for i := r.Intn(3); i > 0; i-- {
			s.Voters.Groups = append(s.Voters.Groups, []quorum.ID(ids()))
		}
		m.Snapshot = s
	}
	return m
}

func TestCodecRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 5000; i++ {
		m := randomMessage(r)
		got, err := Decode(Encode(nil, &m))
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Fatalf("message %d:\n got %+v\nwant %+v", i, got, m)
		}
	}
}

func TestDecodeRejectsTruncationsAndTrailingBytes(t *testing.T) {
	r := rand.New(rand.NewSource(2))
	for i := 0; i < 200; i++ {
		m := randomMessage(r)
		b := Encode(nil, &m)
		for cut := 0; cut < len(b); cut++ {
			if _, err := Decode(b[:cut]); err == nil {
				t.Fatalf("message %d cut at %d of %d decoded", i, cut, len(b))
			}
		}
		if _, err := Decode(append(b, 0)); err == nil {
			t.Fatal("trailing byte accepted")
		}
	}
	if _, err := Decode([]byte{9, 1}); err == nil {
		t.Fatal("unknown version accepted")
	}
}

func FuzzDecode(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 8; i++ {
		m := randomMessage(r)
		f.Add(Encode(nil, &m))
	}
	f.Add([]byte{1, 2, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes.
		if again := Encode(nil, &m); string(again) != string(b) {
			t.Fatalf("re-encoding differs")
		}
	})
}
