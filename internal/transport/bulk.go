package transport

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// chunkFirst and chunkNext are the first byte of a chunk frame: the first
// chunk of a message, which announces the message's size, and the ones
// after it. A message's encoding starts with CodecVersion, which never
// takes these values, so a receiver tells chunks from whole messages by
// their first byte.
const (
	chunkFirst byte = 0xC5
	chunkNext  byte = 0xC6
)

// maxChunk bounds the message bytes of one chunk frame: small enough that
// a heartbeat queued behind a snapshot waits for about a millisecond of
// writing, large enough that the per-frame cost disappears.
const maxChunk = 1 << 20

// bulkMsg is a message that carries a snapshot, on its way to a peer in
// chunk frames. Its encoding is kept as three pieces, the snapshot's data
// in the middle, so that a snapshot of gigabytes is sent from where it
// lies instead of being copied into one buffer on the goroutine that
// sends it.
type bulkMsg struct {
	parts [3][]byte // head, snapshot data, tail (see appendHead)
	size  int       // bytes of the encoding
	sent  int       // bytes of the encoding already written; the writer's alone
	// started is set, under the peer's lock, before the first chunk is
	// written: from then on the message cannot be replaced.
	started bool
	seq     uint64    // place among the peer's queued messages
	due     time.Time // not started before (outbound delay fault)
}

// newBulkMsg splits the encoding of m, which carries a snapshot and
// encodes in size bytes.
func newBulkMsg(m *gpaxos.Message, size int, seq uint64, due time.Time) *bulkMsg {
	parts := [3][]byte{appendHead(nil, m), m.Snapshot.Data, appendTail(nil, m)}
	return &bulkMsg{parts: parts, size: size, seq: seq, due: due}
}

// done reports whether every byte has been written.
func (b *bulkMsg) done() bool { return b.sent == b.size }

// writeChunk writes the next chunk frame, of at most limit message bytes,
// and returns the bytes it wrote, framing included. The first chunk of a
// message announces the message's size.
func (b *bulkMsg) writeChunk(w io.Writer, limit int) (int, error) {
	n := min(limit, b.size-b.sent)
	hdr := make([]byte, 0, frameHeaderSize+1+binary.MaxVarintLen64)
	hdr = appendFrameHeader(hdr, 0)
	if b.sent == 0 {
		hdr = append(hdr, chunkFirst)
		hdr = binary.AppendUvarint(hdr, uint64(b.size))
	} else {
		hdr = append(hdr, chunkNext)
	}
	binary.BigEndian.PutUint32(hdr, uint32(len(hdr)-frameHeaderSize+n))
	if _, err := w.Write(hdr); err != nil {
		return 0, err
	}
	written := len(hdr)
	off := b.sent
	for _, p := range b.parts {
		if off >= len(p) {
			off -= len(p)
			continue
		}
		k := min(len(p)-off, n)
		if _, err := w.Write(p[off : off+k]); err != nil {
			return written, err
		}
		written += k
		b.sent += k
		n -= k
		off = 0
		if n == 0 {
			break
		}
	}
	return written, nil
}

// chunkPayload is the room a chunk frame of at most maxFrame bytes leaves
// for message bytes, after the marker and the first chunk's size.
func chunkPayload(maxFrame int) int {
	return min(maxChunk, maxFrame-1-binary.MaxVarintLen64)
}

// chunkKind returns the marker of the frame of size bytes that r is at,
// which it consumes, or 0 if the frame is not a chunk.
func chunkKind(r *bufio.Reader, size int) byte {
	if size == 0 {
		return 0
	}
	kind, err := r.Peek(1)
	if err != nil || kind[0] != chunkFirst && kind[0] != chunkNext {
		return 0 // an error shows again when the frame is read
	}
	r.Discard(1)
	return kind[0]
}

// assembler puts a message back together from the chunk frames of one
// connection, which carry one message at a time.
type assembler struct {
	limit int    // the largest message accepted (Config.MaxMessageSize)
	total int    // size of the message being assembled; 0 between messages
	buf   []byte // its bytes so far
}

// read consumes the n bytes after the marker of a chunk frame of the
// given kind from r and returns the message's encoding once its last chunk
// is in, nil before.
func (a *assembler) read(r *bufio.Reader, kind byte, n int) ([]byte, error) {
	switch {
	case kind == chunkFirst && a.total != 0:
		return nil, fmt.Errorf("%w: a message's first chunk before the last of the one before", errProtocol)
	case kind == chunkNext && a.total == 0:
		return nil, fmt.Errorf("%w: a chunk without the first of its message", errProtocol)
	}
	if kind == chunkFirst {
		// The size, a varint at the start of the chunk's bytes; the
		// buffer for it grows only as the chunks arrive (appendRead).
		head, _ := r.Peek(min(n, binary.MaxVarintLen64))
		total, k := binary.Uvarint(head)
		if k <= 0 {
			return nil, fmt.Errorf("%w: chunk announcing a message: no size in its %d bytes", errProtocol, n)
		}
		if total == 0 || total > uint64(a.limit) {
			return nil, fmt.Errorf("%w: chunked message of %d bytes, limit %d", errProtocol, total, a.limit)
		}
		r.Discard(k)
		n -= k
		a.total = int(total)
	}
	if len(a.buf)+n > a.total {
		return nil, fmt.Errorf("%w: chunks carry more than the %d bytes announced", errProtocol, a.total)
	}
	var err error
	if a.buf, err = appendRead(r, a.buf, n, a.total); err != nil {
		return nil, err
	}
	if len(a.buf) < a.total {
		return nil, nil
	}
	msg := a.buf
	a.total, a.buf = 0, nil
	return msg, nil
}
