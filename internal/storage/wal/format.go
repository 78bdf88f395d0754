package wal

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Byte layout (all integers little-endian; docs/storage.md has the table).
//
// A segment starts with a 32-byte header:
//
//	0  magic "GWAL"
//	4  uint32 format version (1 or 2)
//	8  int64  prev: the zxid of the last record before this segment, 0 if none
//	16 uint32 CRC-32C of bytes 0..16
//	20 12 bytes reserved, zero
//
// and is named log.<prev+1 as 16 hex digits>: the smallest zxid it may hold,
// which is its first record's zxid whenever zxids are consecutive (as in
// ZooKeeper, whose log files are named after their first zxid). Naming by
// prev rather than by the first record lets a segment exist with no record
// yet, which recovery and TruncateAfter rely on. The header is followed by
// records, each a header and the payload. The version says which header:
// version 1 (20 bytes)
//
//	0  uint32 CRC-32C of bytes 4..20+n (the rest of the header and the payload)
//	4  uint32 n, the payload length
//	8  int64  zxid
//	16 uint32 CRC-32C of bytes 4..16 (length and zxid)
//	20 n bytes of payload
//
// or version 2 (28 bytes), which adds the record's namespace mask and
// covers it with the header checksum:
//
//	0  uint32 CRC-32C of bytes 4..28+n
//	4  uint32 n, the payload length
//	8  int64  zxid
//	16 uint64 mask: bit k set when the record touches namespace k
//	24 uint32 CRC-32C of bytes 4..24 (length, zxid and mask)
//	28 n bytes of payload
//
// In both, the header checksum is the header's last four bytes and covers
// everything between the record checksum and itself.
//
// The header checksum lets a reader recognize a record start without
// trusting, or reading, the payload: recovery uses it to look for valid
// records after a damaged one, which is what separates a torn tail from
// damage in the middle, and it keeps a version 2 record's zxid and mask
// readable when only its payload is damaged. prev chains the segments, so a
// segment missing from the middle of the log is detected.
const (
	segmentMagic      = "GWAL"
	segmentHeaderSize = 32

	// versionPlain is the format of untagged logs: records without a mask.
	versionPlain = 1
	// versionTagged is the format of tagged logs (Options.Tagged): every
	// record carries a namespace mask.
	versionTagged = 2

	recordHeaderSizePlain  = 20
	recordHeaderSizeTagged = 28

	// MaxPayloadBytes bounds one record's payload. Append refuses larger
	// payloads, and a header claiming more is never taken as valid, so a
	// damaged length field cannot make a reader allocate or skip gigabytes.
	MaxPayloadBytes = 64 << 20
)

// MaskAll is the namespace mask of a record that may touch any namespace:
// every record of a version 1 segment, which stores no mask, and every
// record appended with Append rather than AppendTagged.
const MaskAll = ^uint64(0)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordHeaderSize is the size of a record header in a segment of the
// given format version.
func recordHeaderSize(version uint32) int {
	if version == versionTagged {
		return recordHeaderSizeTagged
	}
	return recordHeaderSizePlain
}

// segmentHeader is the decoded header of a segment file.
type segmentHeader struct {
	// version is the format of the segment's records.
	version uint32
	// prev is the zxid of the last record before the segment; every record
	// in it is greater.
	prev int64
}

// base is the smallest zxid the segment may hold, the one in its name.
func (h segmentHeader) base() int64 { return h.prev + 1 }

func (h segmentHeader) encode() []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b[0:4], segmentMagic)
	binary.LittleEndian.PutUint32(b[4:8], h.version)
	binary.LittleEndian.PutUint64(b[8:16], uint64(h.prev))
	binary.LittleEndian.PutUint32(b[16:20], crc32.Checksum(b[0:16], castagnoli))
	return b
}

// decodeSegmentHeader parses b (segmentHeaderSize bytes) and returns a
// reason when it is not a valid header.
func decodeSegmentHeader(b []byte) (segmentHeader, string) {
	if string(b[0:4]) != segmentMagic {
		return segmentHeader{}, "bad segment magic"
	}
	if got, want := binary.LittleEndian.Uint32(b[16:20]), crc32.Checksum(b[0:16], castagnoli); got != want {
		return segmentHeader{}, "segment header checksum mismatch"
	}
	v := binary.LittleEndian.Uint32(b[4:8])
	if v != versionPlain && v != versionTagged {
		return segmentHeader{}, fmt.Sprintf("unsupported segment format version %d", v)
	}
	h := segmentHeader{version: v, prev: int64(binary.LittleEndian.Uint64(b[8:16]))}
	if h.prev < 0 || h.prev == 1<<63-1 {
		return segmentHeader{}, "segment header zxid out of range"
	}
	return h, ""
}

// recordHeader is the decoded, header-checksum-verified header of a record.
type recordHeader struct {
	crc    uint32
	length int64
	zxid   int64
	// mask is the stored namespace mask (version 2), or MaskAll.
	mask uint64
}

// putRecordHeader fills hdr, whose length (recordHeaderSize of the
// segment's version) selects the format, for the record (zxid, mask,
// payload), both checksums included. A version 1 header drops mask.
func putRecordHeader(hdr []byte, zxid int64, mask uint64, payload []byte) {
	n := len(hdr)
	binary.LittleEndian.PutUint32(hdr[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint64(hdr[8:16], uint64(zxid))
	if n == recordHeaderSizeTagged {
		binary.LittleEndian.PutUint64(hdr[16:24], mask)
	}
	binary.LittleEndian.PutUint32(hdr[n-4:n], crc32.Checksum(hdr[4:n-4], castagnoli))
	crc := crc32.Update(0, castagnoli, hdr[4:n])
	crc = crc32.Update(crc, castagnoli, payload)
	binary.LittleEndian.PutUint32(hdr[0:4], crc)
}

// decodeRecordHeader parses b, a whole record header whose length selects
// the format. ok is false when the header checksum fails or the fields are
// impossible for a record Append could have written.
func decodeRecordHeader(b []byte) (h recordHeader, ok bool) {
	n := len(b)
	if binary.LittleEndian.Uint32(b[n-4:n]) != crc32.Checksum(b[4:n-4], castagnoli) {
		return recordHeader{}, false
	}
	h = recordHeader{
		crc:    binary.LittleEndian.Uint32(b[0:4]),
		length: int64(binary.LittleEndian.Uint32(b[4:8])),
		zxid:   int64(binary.LittleEndian.Uint64(b[8:16])),
		mask:   MaskAll,
	}
	if n == recordHeaderSizeTagged {
		h.mask = binary.LittleEndian.Uint64(b[16:24])
	}
	if h.length > MaxPayloadBytes || h.zxid <= 0 {
		return recordHeader{}, false
	}
	return h, true
}

// recordCRC starts the record checksum from the verified header bytes; the
// caller continues it over the payload and compares with h.crc.
func recordCRC(hdr []byte) uint32 { return crc32.Update(0, castagnoli, hdr[4:]) }
