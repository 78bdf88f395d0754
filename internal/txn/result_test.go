package txn

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func sampleResults() []Result {
	st := zkproto.Stat{Czxid: 1, Mzxid: 2, Ctime: 3, Mtime: 4, Version: 5, Cversion: -6, Aversion: 7,
		EphemeralOwner: 8, DataLength: 9, NumChildren: 10, Pzxid: 11}
	return []Result{
		{},
		{Err: zkproto.ErrNodeExists},
		{Path: "/2/a-0000000001", Stat: st},
		{Multi: []Result{}},
		{Multi: []Result{{Path: "/2/x", Stat: st}, {}, {Stat: st}}},
		{Err: zkproto.ErrBadVersion, Multi: []Result{{}, {Err: zkproto.ErrBadVersion},
			{Err: zkproto.ErrRuntimeInconsistency}}},
	}
}

// TestResultRoundTrip: every result decodes to itself, and truncating its
// encoding anywhere is refused.
func TestResultRoundTrip(t *testing.T) {
	for _, r := range sampleResults() {
		b := MarshalResult(nil, &r)
		got, err := UnmarshalResult(b)
		if err != nil || !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip of %+v: %+v, %v", r, got, err)
		}
		for n := range len(b) {
			if _, err := UnmarshalResult(b[:n]); err == nil {
				t.Fatalf("%+v truncated to %d bytes decoded", r, n)
			}
		}
		if _, err := UnmarshalResult(append(b, 0)); err == nil {
			t.Fatalf("%+v with a trailing byte decoded", r)
		}
	}
}

// FuzzUnmarshalResult checks that UnmarshalResult never panics and that
// whatever it accepts survives a round trip unchanged, with a stable
// encoding.
func FuzzUnmarshalResult(f *testing.F) {
	for _, r := range sampleResults() {
		f.Add(MarshalResult(nil, &r))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := UnmarshalResult(b)
		if err != nil {
			return
		}
		b2 := MarshalResult(nil, &r)
		r2, err := UnmarshalResult(b2)
		if err != nil {
			t.Fatalf("re-encoding of an accepted result does not decode: %v", err)
		}
		if !reflect.DeepEqual(r, r2) {
			t.Fatalf("round trip changed the result:\n%+v\n%+v", r, r2)
		}
		if b3 := MarshalResult(nil, &r2); !bytes.Equal(b2, b3) {
			t.Fatal("encoding is not stable")
		}
	})
}
