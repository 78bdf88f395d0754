package datatree

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
)

// NodeSpan says where one node lies in an encoded snapshot (WriteSnapshot's
// bytes), for tools that look at or damage a snapshot's bytes without
// knowing its format. Offsets count from the first byte of the encoding.
type NodeSpan struct {
	Path string
	// RecordOff and RecordLen are the node's encoded record: its path,
	// data, ACL index and stat fields, without the frame's length prefix.
	RecordOff, RecordLen int64
	// DataOff and DataLen are the node's data bytes, inside the record
	// (DataLen is zero for empty or null data; DataOff is then where they
	// would start).
	DataOff, DataLen int64
	// Mzxid is the zxid of the node's last change.
	Mzxid int64
}

// SnapshotNodeSpans reads an encoded snapshot from r and calls fn for
// every node, in the snapshot's order (parents before children), with
// where its record and data lie. It reads r to the end and checks the
// framing and the trailer's checksum as ReadSnapshot does, but builds no
// tree, so it neither checks the digest nor the tree's shape. An error
// from fn stops it and is returned as is.
func SnapshotNodeSpans(r io.Reader, fn func(NodeSpan) error) error {
	sr := &snapReader{r: bufio.NewReaderSize(r, 64<<10), crc: crc32.New(crcTable)}
	h, err := sr.header()
	if err != nil {
		return err
	}
	for range h.nACL {
		if _, err := sr.next("acl"); err != nil {
			return err
		}
	}
	for range h.nNodes {
		if err := sr.nodeSpan(fn); err != nil {
			return err
		}
	}
	for range h.nSessions {
		if _, err := sr.next("session"); err != nil {
			return err
		}
	}
	for range h.nSections {
		sh, err := sr.sectionHeader()
		if err != nil {
			return err
		}
		body := &io.LimitedReader{R: sr.r, N: sh.length}
		sec := &snapReader{r: bufio.NewReaderSize(body, 64<<10), crc: crc32.New(crcTable), off: sr.off}
		for range sh.nodes {
			if err := sec.nodeSpan(fn); err != nil {
				return err
			}
		}
		var sum [4]byte
		if _, err := io.ReadFull(sr.r, sum[:]); err != nil || body.N != 0 || sec.off != sr.off+sh.length {
			return fmt.Errorf("%w: section /%s: its body is not its nodes", ErrBadSnapshot, sh.name)
		}
		if binary.BigEndian.Uint32(sum[:]) != sec.crc.Sum32() {
			return fmt.Errorf("%w: section /%s: checksum mismatch", ErrBadSnapshot, sh.name)
		}
		sr.off += sh.length + 4
	}
	return sr.trailer()
}

// nodeSpan reads the next node frame and calls fn with its spans.
func (sr *snapReader) nodeSpan(fn func(NodeSpan) error) error {
	d, err := sr.next("node")
	if err != nil {
		return err
	}
	recLen := int64(d.Remaining())
	recOff := sr.off - recLen
	path := d.String()
	data := d.Buffer()
	dataEnd := int64(d.Offset())
	_ = d.Int() // ACL index
	_ = d.Long()
	mzxid := d.Long()
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: node: %v", ErrBadSnapshot, err)
	}
	return fn(NodeSpan{Path: path, RecordOff: recOff, RecordLen: recLen,
		DataOff: recOff + dataEnd - int64(len(data)), DataLen: int64(len(data)), Mzxid: mzxid})
}
