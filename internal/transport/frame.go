package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// frameHeaderSize is the length prefix of every frame.
const frameHeaderSize = 4

// frameChunk bounds how much readFrame allocates ahead of the bytes that
// actually arrived: a peer that announces a 500 MiB frame and sends ten
// bytes costs one chunk, not 500 MiB.
const frameChunk = 1 << 20

// ErrFrameTooLarge is returned when a frame announces more bytes than the
// configured maximum; the connection is closed, since its framing can no
// longer be trusted.
var ErrFrameTooLarge = errors.New("transport: frame too large")

// readFrame reads one length-prefixed frame of at most limit bytes into a
// fresh buffer that the caller owns.
func readFrame(r *bufio.Reader, limit int) ([]byte, error) {
	size, err := readFrameHeader(r, limit)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, size)
}

// readFrameHeader reads a frame's length prefix and checks it against
// limit.
func readFrameHeader(r *bufio.Reader, limit int) (int, error) {
	var hdr [frameHeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, err
	}
	n := int64(binary.BigEndian.Uint32(hdr[:]))
	if n > int64(limit) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrFrameTooLarge, n, limit)
	}
	return int(n), nil
}

// readFrameBody reads the size bytes of a frame into a fresh buffer that
// the caller owns.
func readFrameBody(r *bufio.Reader, size int) ([]byte, error) {
	return appendRead(r, nil, size, size)
}

// appendRead appends n bytes read from r to buf, which grows
// geometrically, a frameChunk at a time as the bytes arrive, never past
// limit bytes in all: what a peer announces is only allocated as it
// sends it.
func appendRead(r io.Reader, buf []byte, n, limit int) ([]byte, error) {
	end := len(buf) + n
	for len(buf) < end {
		want := min(end-len(buf), frameChunk)
		if cap(buf)-len(buf) < want {
			grown := make([]byte, len(buf), min(limit, max(2*cap(buf), len(buf)+want)))
			copy(grown, buf)
			buf = grown
		}
		k, err := io.ReadFull(r, buf[len(buf):len(buf)+want])
		buf = buf[:len(buf)+k]
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// appendFrameHeader appends the length prefix of a frame of n bytes.
func appendFrameHeader(b []byte, n int) []byte {
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

// writeFrame writes payload as one frame.
func writeFrame(w io.Writer, payload []byte) error {
	var hdr [frameHeaderSize]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}
