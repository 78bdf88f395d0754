package zkproto

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// DefaultMaxPacket is jute.maxbuffer's default: the largest frame payload a
// ZooKeeper server accepts (BinaryInputArchive.maxBuffer).
const DefaultMaxPacket = 0xfffff

// FrameTooLargeError reports a frame whose length prefix is negative or
// over the limit. The stream cannot be resynchronized after it, so the
// connection must be closed.
type FrameTooLargeError struct {
	Len, Max int // the length prefix read, and the limit it broke
}

// Error implements error.
func (e *FrameTooLargeError) Error() string {
	return fmt.Sprintf("zkproto: frame length %d outside [0, %d]", e.Len, e.Max)
}

// ReadFrame reads one frame: a big-endian int32 length, then that many
// bytes. It returns the payload in buf's storage when cap(buf) is large
// enough (so the result is only valid until buf is reused) and in a new
// slice otherwise. A length that is negative or larger than maxLen is a
// *FrameTooLargeError, reported before anything is allocated. A stream that
// ends cleanly before a frame starts returns io.EOF; one that ends inside a
// frame returns io.ErrUnexpectedEOF.
func ReadFrame(r *bufio.Reader, buf []byte, maxLen int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(int32(binary.BigEndian.Uint32(hdr[:])))
	if n < 0 || n > maxLen {
		return nil, &FrameTooLargeError{Len: n, Max: maxLen}
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

// FourLetterWord reports whether the first four bytes of a connection are
// one of ZooKeeper's four-letter admin commands (FourLetterCommands.java)
// rather than the length prefix of a ConnectRequest, and returns the word.
// No such prefix is a plausible length: each is over 1.6 GB, far beyond
// DefaultMaxPacket, which is why ZooKeeper can share the port. Whether a
// recognised word is enabled (4lw.commands.whitelist) is the server's
// decision.
func FourLetterWord(prefix [4]byte) (string, bool) {
	for _, w := range fourLetterWords {
		if string(prefix[:]) == w { // compared in place; no allocation
			return w, true
		}
	}
	return "", false
}

// fourLetterWords are the commands of ZooKeeper 3.9's FourLetterCommands.
var fourLetterWords = [...]string{
	"conf", "cons", "crst", "dump", "envi", "ruok", "srst", "srvr", "stat",
	"wchs", "wchc", "dirs", "wchp", "mntr", "isro", "hash", "gtmk", "stmk",
}
