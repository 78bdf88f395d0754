package wal

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
)

// badRecord describes a record that fails validation: where it starts and
// why. Whether it is a torn tail, corruption or (Options.KeepDamaged) a
// damaged record kept in place is decided by the caller, which knows
// whether the segment is the newest one and what follows.
type badRecord struct {
	off int64
	// next is where the following record would start if the header is
	// trustworthy (its checksum holds), or -1 when the length is unknown.
	next int64
	// header is the record's header when its checksum holds (next >= 0).
	header recordHeader
	// payloadOnly: the header holds and the whole payload lies in the
	// segment, but the record checksum fails, so only the payload is
	// damaged. The scanner has then moved past the record and may go on.
	payloadOnly bool
	reason      string
}

// keepable reports whether Options.KeepDamaged may keep the bad record in
// place, in a segment of the given format version: only its payload is
// damaged, and its header holds a mask to attribute the loss to.
func (b *badRecord) keepable(version uint32) bool {
	return b.payloadOnly && version == versionTagged
}

// scanner reads the records of one segment sequentially, verifying both
// checksums of each. It does not check zxid order; its callers do, since
// they know what came before the segment.
type scanner struct {
	f    *os.File
	r    *bufio.Reader
	off  int64 // offset of the next record
	size int64 // bytes of the segment to read
	// fresh makes next return a newly allocated payload for every record;
	// otherwise one buffer is reused.
	fresh bool
	buf   []byte
	// hdr holds one record header of the segment's format.
	hdr []byte
}

// newScanner reads records of f, a segment of the given format version,
// from just after the segment header up to size bytes.
func newScanner(f *os.File, size int64, version uint32, fresh bool) *scanner {
	return &scanner{
		f:     f,
		r:     bufio.NewReaderSize(io.NewSectionReader(f, segmentHeaderSize, size-segmentHeaderSize), 256<<10),
		off:   segmentHeaderSize,
		size:  size,
		fresh: fresh,
		hdr:   make([]byte, recordHeaderSize(version)),
	}
}

// next returns the next record's header and payload. At a clean end of the
// segment it returns io.EOF. A record that fails validation yields a
// *badRecord; the scanner may be used again only after one that is
// payloadOnly. Other errors are I/O errors.
func (s *scanner) next() (recordHeader, []byte, error) {
	hs := int64(len(s.hdr))
	if s.off == s.size {
		return recordHeader{}, nil, io.EOF
	}
	if s.size-s.off < hs {
		return recordHeader{}, nil, &badRecord{off: s.off, next: -1, reason: fmt.Sprintf("partial record header (%d of %d bytes)", s.size-s.off, hs)}
	}
	if _, err := io.ReadFull(s.r, s.hdr); err != nil {
		return recordHeader{}, nil, s.ioError(err)
	}
	h, ok := decodeRecordHeader(s.hdr)
	if !ok {
		return recordHeader{}, nil, &badRecord{off: s.off, next: -1, reason: "record header checksum mismatch"}
	}
	end := s.off + hs + h.length
	if end > s.size {
		return recordHeader{}, nil, &badRecord{off: s.off, next: end, header: h, reason: fmt.Sprintf("partial payload (%d of %d bytes)", s.size-s.off-hs, h.length)}
	}
	var payload []byte
	if s.fresh {
		payload = make([]byte, h.length)
	} else {
		if int64(cap(s.buf)) < h.length {
			s.buf = make([]byte, h.length)
		}
		payload = s.buf[:h.length]
	}
	if _, err := io.ReadFull(s.r, payload); err != nil {
		return recordHeader{}, nil, s.ioError(err)
	}
	if crc32.Update(recordCRC(s.hdr), castagnoli, payload) != h.crc {
		bad := &badRecord{off: s.off, next: end, header: h, payloadOnly: true, reason: "record checksum mismatch"}
		s.off = end
		return recordHeader{}, nil, bad
	}
	s.off = end
	return h, payload, nil
}

// ioError turns an unexpected end of the section (the file shrank under
// us) into an error naming the file; anything else passes through.
func (s *scanner) ioError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("wal: %s ended before offset %d: %w", s.f.Name(), s.size, io.ErrUnexpectedEOF)
	}
	return err
}

// Error implements error so that a badRecord can travel through next's
// error result; it is never returned to users of the package.
func (b *badRecord) Error() string {
	return fmt.Sprintf("bad record at offset %d: %s", b.off, b.reason)
}

// allZero reports whether f holds only zero bytes in [from, to).
func allZero(f io.ReaderAt, from, to int64) (bool, error) {
	buf := make([]byte, 64<<10)
	for off := from; off < to; {
		n := int(min(int64(len(buf)), to-off))
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return false, err
		}
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		off += int64(n)
	}
	return true, nil
}

// findValidRecord looks for any offset in [from, size) where a complete
// record of the given format version with valid checksums starts. It is
// the test that separates a torn tail (nothing valid after the bad record)
// from corruption (valid data after it). Each candidate offset costs one
// CRC of a record header's checked bytes, so the scan is linear in the
// bytes searched; it runs only when a segment is damaged.
func findValidRecord(f io.ReaderAt, version uint32, from, size int64) (off, zxid int64, found bool, err error) {
	const window = 1 << 20
	hs := recordHeaderSize(version)
	buf := make([]byte, window+hs)
	var payload []byte
	for start := from; start+int64(hs) <= size; start += window {
		n := int(min(int64(len(buf)), size-start))
		if _, err := f.ReadAt(buf[:n], start); err != nil {
			return 0, 0, false, err
		}
		for i := 0; i < window && i+hs <= n; i++ {
			hdr := buf[i : i+hs]
			h, ok := decodeRecordHeader(hdr)
			if !ok {
				continue
			}
			at := start + int64(i)
			if at+int64(hs)+h.length > size {
				continue
			}
			if int64(cap(payload)) < h.length {
				payload = make([]byte, h.length)
			}
			p := payload[:h.length]
			if _, err := f.ReadAt(p, at+int64(hs)); err != nil {
				return 0, 0, false, err
			}
			if crc32.Update(recordCRC(hdr), castagnoli, p) == h.crc {
				return at, h.zxid, true, nil
			}
		}
	}
	return 0, 0, false, nil
}
