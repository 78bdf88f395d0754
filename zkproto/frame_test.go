package zkproto

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func TestReadFrame(t *testing.T) {
	stream := hexBytes(t, "00000003 616263", "00000000", "00000001 7a")
	r := bufio.NewReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 8)
	for _, want := range []string{"abc", "", "z"} {
		got, err := ReadFrame(r, buf, 16)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
		if len(got) > 0 && &got[0] != &buf[:1][0] {
			t.Errorf("frame %q did not reuse the buffer", want)
		}
	}
	if _, err := ReadFrame(r, buf, 16); err != io.EOF {
		t.Fatalf("at a clean end of stream: %v, want io.EOF", err)
	}
}

func TestReadFrameGrowsBuffer(t *testing.T) {
	r := bufio.NewReader(bytes.NewReader(hexBytes(t, "00000004 01020304")))
	small := make([]byte, 2)
	got, err := ReadFrame(r, small, 16)
	if err != nil || !bytes.Equal(got, []byte{1, 2, 3, 4}) || small[0] != 0 {
		t.Fatalf("got %x, %v (small buffer now %x)", got, err, small)
	}
}

func TestReadFrameLimits(t *testing.T) {
	cases := []struct {
		name    string
		prefix  string
		max     int
		wantLen int
	}{
		{"one over the limit", "00000011", 16, 17},
		{"negative", "ffffffff", 16, -1},
		{"most negative", "80000000", DefaultMaxPacket, -1 << 31},
		{"over the default", "00100000", DefaultMaxPacket, DefaultMaxPacket + 1},
		{"a four-letter word read as a length", "72756f6b", DefaultMaxPacket, 0x72756f6b},
	}
	for _, c := range cases {
		// The payload is absent: the limit must be enforced before reading it.
		r := bufio.NewReader(bytes.NewReader(hexBytes(t, c.prefix)))
		_, err := ReadFrame(r, nil, c.max)
		var tooBig *FrameTooLargeError
		if !errors.As(err, &tooBig) {
			t.Errorf("%s: got %v, want *FrameTooLargeError", c.name, err)
			continue
		}
		if tooBig.Len != c.wantLen || tooBig.Max != c.max {
			t.Errorf("%s: got %+v, want Len %d Max %d", c.name, tooBig, c.wantLen, c.max)
		}
	}
	// Exactly the limit is allowed.
	r := bufio.NewReader(bytes.NewReader(append(hexBytes(t, "00000010"), make([]byte, 16)...)))
	if got, err := ReadFrame(r, nil, 16); err != nil || len(got) != 16 {
		t.Fatalf("frame at the limit: %d bytes, %v", len(got), err)
	}
}

func TestReadFrameTruncated(t *testing.T) {
	for _, in := range []string{"00", "000000", "00000004", "00000004 0102"} {
		r := bufio.NewReader(bytes.NewReader(hexBytes(t, in)))
		if _, err := ReadFrame(r, nil, 16); err != io.ErrUnexpectedEOF {
			t.Errorf("%s: got %v, want io.ErrUnexpectedEOF", in, err)
		}
	}
}

func TestFourLetterWord(t *testing.T) {
	words := []string{"conf", "cons", "crst", "dump", "envi", "ruok", "srst", "srvr", "stat",
		"wchs", "wchc", "dirs", "wchp", "mntr", "isro", "hash", "gtmk", "stmk"}
	for _, w := range words {
		got, ok := FourLetterWord([4]byte([]byte(w)))
		if !ok || got != w {
			t.Errorf("%q: got %q, %v", w, got, ok)
		}
		// ZooKeeper can share the port only because no word is a length a
		// server would accept.
		if n := int32(binary.BigEndian.Uint32([]byte(w))); n <= DefaultMaxPacket {
			t.Errorf("%q read as a length is %d, which a server would accept", w, n)
		}
	}
	for _, w := range []string{"RUOK", "ruo ", "kill", "reqs", "\x00\x00\x00\x2d", "\xff\xff\xff\xff"} {
		if got, ok := FourLetterWord([4]byte([]byte(w))); ok || got != "" {
			t.Errorf("%q recognised as %q", w, got)
		}
	}
	allocs := testing.AllocsPerRun(100, func() { FourLetterWord([4]byte{'m', 'n', 't', 'r'}) })
	if allocs != 0 {
		t.Errorf("FourLetterWord allocates %v times", allocs)
	}
}
