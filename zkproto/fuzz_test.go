package zkproto

import (
	"bufio"
	"bytes"
	"reflect"
	"testing"
)

// FuzzDecodeRequest feeds arbitrary bodies to every request decoder: no
// panic, and whatever decodes must re-encode to bytes that decode to the
// same value.
func FuzzDecodeRequest(f *testing.F) {
	for _, r := range sampleRecords() {
		b := encode(r)
		for _, op := range []OpCode{OpCreate, OpCreateTTL, OpDelete, OpGetData, OpSetData, OpSetACL,
			OpMulti, OpMultiRead, OpSetWatches, OpSetWatches2, OpAuth, OpAddWatch, OpRemoveWatches} {
			f.Add(int32(op), b)
		}
	}
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, err := DecodeRequest(OpCode(op), NewDecoder(body))
		if err != nil || rec == nil {
			return
		}
		again := reflect.New(reflect.TypeOf(rec).Elem()).Interface().(Record)
		if err := again.Decode(NewDecoder(encode(rec))); err != nil {
			t.Fatalf("re-decoding %T: %v", rec, err)
		}
		if !reflect.DeepEqual(normalizeNil(rec), normalizeNil(again)) {
			t.Fatalf("%T changed in a round trip:\n%+v\n%+v", rec, rec, again)
		}
	})
}

// normalizeNil makes nil and empty slices compare equal by re-encoding.
func normalizeNil(r Record) string { return string(encode(r)) }

// FuzzMulti feeds arbitrary bytes to the multi request and response
// decoders.
func FuzzMulti(f *testing.F) {
	recs := sampleRecords()
	f.Add(encode(recs["MultiRequest"]))
	f.Add(encode(recs["MultiResponse"]))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req MultiRequest
		if req.Decode(NewDecoder(b)) == nil {
			var again MultiRequest
			if err := again.Decode(NewDecoder(encode(&req))); err != nil {
				t.Fatalf("re-decoding multi request: %v", err)
			}
		}
		var resp MultiResponse
		resp.Decode(NewDecoder(b))
	})
}

// FuzzConnectRequest feeds arbitrary handshakes.
func FuzzConnectRequest(f *testing.F) {
	recs := sampleRecords()
	f.Add(encode(recs["ConnectRequest"]))
	f.Add(encode(&ConnectRequest{Passwd: []byte{}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ConnectRequest
		if r.Decode(NewDecoder(b)) != nil {
			return
		}
		var again ConnectRequest
		if err := again.Decode(NewDecoder(encode(&r))); err != nil || again.HasReadOnly != r.HasReadOnly {
			t.Fatalf("re-decoding connect request: %v", err)
		}
	})
}

// FuzzReadFrame feeds arbitrary streams to the framer.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("ruok"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bufio.NewReader(bytes.NewReader(b))
		var buf []byte
		for i := 0; i < 64; i++ {
			frame, err := ReadFrame(r, buf, 1024)
			if err != nil {
				return
			}
			if len(frame) > 1024 {
				t.Fatalf("frame of %d bytes over the limit", len(frame))
			}
			buf = frame
		}
	})
}

// FuzzValidatePath checks the validator never panics and agrees with the
// obvious structural rules.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"/", "/a/b", "/a//b", "/.", "/\U0001F600", "a"} {
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, p string, seq bool) {
		if ValidatePath(p, seq) == nil {
			q := p
			if seq {
				q += "1"
			}
			if q == "" || q[0] != '/' || (len(q) > 1 && q[len(q)-1] == '/') || bytes.Contains([]byte(q), []byte("//")) {
				t.Fatalf("accepted %q (sequential %v)", p, seq)
			}
		}
	})
}
