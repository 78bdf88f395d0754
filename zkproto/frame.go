package zkproto

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// DefaultMaxPacket is jute.maxbuffer's default: the largest frame a
// ZooKeeper server accepts.
const DefaultMaxPacket = 0xfffff

// FrameTooLargeError reports a frame whose length prefix is negative or
// over the limit. The connection cannot be resynchronized after it.
type FrameTooLargeError struct {
	Len, Max int
}

func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("zkproto: frame length %d outside [0, %d]", e.Len, e.Max)
}

// ReadFrame reads one length-prefixed frame. It reuses buf when it is large
// enough; the result is valid until the next call with the same buf. A
// connection closed cleanly before a frame starts returns io.EOF; one closed
// inside a frame returns io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, buf []byte, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 || n > max {
		return nil, &FrameTooLargeError{Len: n, Max: max}
	}
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// fourLetterWords are the commands ZooKeeper recognizes in place of the
// first length prefix of a connection (FourLetterCommands.java).
var fourLetterWords = map[string]bool{
	"conf": true, "cons": true, "crst": true, "dump": true, "envi": true, "ruok": true,
	"srst": true, "srvr": true, "stat": true, "wchs": true, "wchc": true, "dirs": true,
	"wchp": true, "mntr": true, "isro": true, "hash": true, "gtmk": true, "stmk": true,
}

// FourLetterWord reports whether the first four bytes of a connection are a
// four-letter word rather than a frame length.
func FourLetterWord(prefix [4]byte) (string, bool) {
	w := string(prefix[:])
	return w, fourLetterWords[w]
}
