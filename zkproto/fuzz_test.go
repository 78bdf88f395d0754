package zkproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"reflect"
	"testing"
)

// The fuzz targets below check two invariants on arbitrary input: nothing
// panics, and whatever decodes re-encodes to bytes that decode to an equal
// value, byte-for-byte stable from then on. Seeds are the valid encodings
// of sampleRecords plus the files under testdata/fuzz/<FuzzName>/.

// checkReencode re-encodes rec, decodes the bytes with decode and checks
// that the value is unchanged and the encoding stable.
func checkReencode(t *testing.T, rec Record, decode func([]byte) (Record, error)) {
	t.Helper()
	b := encode(rec)
	again, err := decode(b)
	if err != nil {
		t.Fatalf("re-decoding %T %+v from %x: %v", rec, rec, b, err)
	}
	if !reflect.DeepEqual(rec, again) {
		t.Fatalf("%T changed in a round trip:\n was %+v\n now %+v", rec, rec, again)
	}
	if b2 := encode(again); !bytes.Equal(b, b2) {
		t.Fatalf("%T encoding not stable:\n %x\n %x", rec, b, b2)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, c := range requestSamples() {
		f.Add(int32(c.op), encode(c.rec))
	}
	f.Add(int32(OpPing), []byte{})
	f.Add(int32(OpMulti), encode(&MultiRequest{}))
	f.Fuzz(func(t *testing.T, op int32, body []byte) {
		rec, err := DecodeRequest(OpCode(op), NewDecoder(body))
		if err != nil || rec == nil {
			return
		}
		checkReencode(t, rec, func(b []byte) (Record, error) { return DecodeRequest(OpCode(op), NewDecoder(b)) })
	})
}

func FuzzMulti(f *testing.F) {
	recs := sampleRecords()
	for _, name := range []string{"MultiRequest", "MultiReadRequest", "MultiResponse", "MultiReadResponse"} {
		f.Add(encode(recs[name]))
	}
	f.Add(encode(&MultiRequest{}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req MultiRequest
		if req.Decode(NewDecoder(b)) == nil {
			if len(req.Ops) > len(b)/9 {
				t.Fatalf("%d ops from %d bytes", len(req.Ops), len(b))
			}
			checkReencode(t, &req, func(b []byte) (Record, error) {
				var r MultiRequest
				return &r, r.Decode(NewDecoder(b))
			})
		}
		var resp MultiResponse
		if resp.Decode(NewDecoder(b)) == nil {
			checkReencode(t, &resp, func(b []byte) (Record, error) {
				var r MultiResponse
				return &r, r.Decode(NewDecoder(b))
			})
		}
	})
}

func FuzzConnectRequest(f *testing.F) {
	recs := sampleRecords()
	f.Add(encode(recs["ConnectRequest"]))
	f.Add(encode(recs["ConnectResponse"]))
	f.Add(encode(&ConnectRequest{Passwd: []byte{}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req ConnectRequest
		if req.Decode(NewDecoder(b)) == nil {
			checkReencode(t, &req, func(b []byte) (Record, error) {
				var r ConnectRequest
				return &r, r.Decode(NewDecoder(b))
			})
		}
		var resp ConnectResponse
		if resp.Decode(NewDecoder(b)) == nil {
			checkReencode(t, &resp, func(b []byte) (Record, error) {
				var r ConnectResponse
				return &r, r.Decode(NewDecoder(b))
			})
		}
	})
}

// FuzzReadFrame reads frames from an arbitrary stream with an arbitrary
// limit. Besides not panicking, the frames read must, re-framed, be exactly
// the bytes consumed, and the read must stop with io.EOF, a truncation or
// a *FrameTooLargeError and nothing else.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 4, 1, 2, 3, 4, 0, 0, 0, 0}, uint16(16))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint16(16))
	f.Add([]byte("ruok"), uint16(0xffff))
	f.Add(EncodeRequest(nil, RequestHeader{Xid: 1, Op: OpExists}, &ExistsRequest{Path: "/a"}), uint16(64))
	f.Fuzz(func(t *testing.T, stream []byte, maxLen uint16) {
		r := bufio.NewReader(bytes.NewReader(stream))
		var buf, reframed []byte
		for {
			frame, err := ReadFrame(r, buf, int(maxLen))
			var tooBig *FrameTooLargeError
			switch {
			case err == nil:
			case err == io.EOF:
				if !bytes.Equal(reframed, stream) {
					t.Fatalf("frames re-framed to %x, stream was %x", reframed, stream)
				}
				return
			case err == io.ErrUnexpectedEOF:
				if !bytes.HasPrefix(stream, reframed) || len(stream)-len(reframed) == 0 {
					t.Fatalf("truncation reported after %d of %d bytes", len(reframed), len(stream))
				}
				return
			case errors.As(err, &tooBig):
				n := int(int32(binary.BigEndian.Uint32(stream[len(reframed):])))
				if tooBig.Len != n || tooBig.Max != int(maxLen) || (n >= 0 && n <= int(maxLen)) {
					t.Fatalf("%+v for length %d", tooBig, n)
				}
				return
			default:
				t.Fatalf("unexpected error %v", err)
			}
			if len(frame) > int(maxLen) {
				t.Fatalf("frame of %d bytes over the limit %d", len(frame), maxLen)
			}
			reframed = binary.BigEndian.AppendUint32(reframed, uint32(len(frame)))
			reframed = append(reframed, frame...)
			buf = frame
		}
	})
}

// FuzzValidatePath compares ValidatePath with the restated ZooKeeper
// algorithm, reason and index included.
func FuzzValidatePath(f *testing.F) {
	for _, p := range []string{"/", "/a/b", "/a//b", "/.", "/a/..", "/\U0001F600", "a", "/a\xff", "/test\uffef"} {
		f.Add(p, false)
		f.Add(p, true)
	}
	f.Fuzz(func(t *testing.T, p string, seq bool) {
		if got, want := reasonOf(t, ValidatePath(p, seq)), javaValidatePath(p, seq); got != want {
			t.Fatalf("ValidatePath(%q, %v): reason %q, ZooKeeper's %q", p, seq, got, want)
		}
	})
}
