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
//	4  uint32 format version (1)
//	8  int64  prev: the zxid of the last record before this segment, 0 if none
//	16 uint32 CRC-32C of bytes 0..16
//	20 12 bytes reserved, zero
//
// and is named log.<prev+1 as 16 hex digits>: the smallest zxid it may hold,
// which is its first record's zxid whenever zxids are consecutive (as in
// ZooKeeper, whose log files are named after their first zxid). Naming by
// prev rather than by the first record lets a segment exist with no record
// yet, which recovery and TruncateAfter rely on. The header is followed by
// records, each a 20-byte header and the payload:
//
//	0  uint32 CRC-32C of bytes 4..20+n (the rest of the header and the payload)
//	4  uint32 n, the payload length
//	8  int64  zxid
//	16 uint32 CRC-32C of bytes 4..16 (length and zxid)
//	20 n bytes of payload
//
// The header checksum lets a reader recognize a record start without
// trusting, or reading, the payload: recovery uses it to look for valid
// records after a damaged one, which is what separates a torn tail from
// damage in the middle. prev chains the segments, so a segment missing from
// the middle of the log is detected.
const (
	segmentMagic      = "GWAL"
	segmentVersion    = 1
	segmentHeaderSize = 32
	recordHeaderSize  = 20

	// MaxPayloadBytes bounds one record's payload. Append refuses larger
	// payloads, and a header claiming more is never taken as valid, so a
	// damaged length field cannot make a reader allocate or skip gigabytes.
	MaxPayloadBytes = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// segmentHeader is the decoded header of a segment file.
type segmentHeader struct {
	// prev is the zxid of the last record before the segment; every record
	// in it is greater.
	prev int64
}

// base is the smallest zxid the segment may hold, the one in its name.
func (h segmentHeader) base() int64 { return h.prev + 1 }

func (h segmentHeader) encode() []byte {
	b := make([]byte, segmentHeaderSize)
	copy(b[0:4], segmentMagic)
	binary.LittleEndian.PutUint32(b[4:8], segmentVersion)
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
	if v := binary.LittleEndian.Uint32(b[4:8]); v != segmentVersion {
		return segmentHeader{}, fmt.Sprintf("unsupported segment format version %d", v)
	}
	h := segmentHeader{prev: int64(binary.LittleEndian.Uint64(b[8:16]))}
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
}

// putRecordHeader fills hdr (recordHeaderSize bytes) for the record
// (zxid, payload), both checksums included.
func putRecordHeader(hdr []byte, zxid int64, payload []byte) {
	binary.LittleEndian.PutUint32(hdr[4:8], uint32(len(payload)))
	binary.LittleEndian.PutUint64(hdr[8:16], uint64(zxid))
	binary.LittleEndian.PutUint32(hdr[16:20], crc32.Checksum(hdr[4:16], castagnoli))
	crc := crc32.Update(0, castagnoli, hdr[4:20])
	crc = crc32.Update(crc, castagnoli, payload)
	binary.LittleEndian.PutUint32(hdr[0:4], crc)
}

// decodeRecordHeader parses b (recordHeaderSize bytes). ok is false when the
// header checksum fails or the fields are impossible for a record Append
// could have written.
func decodeRecordHeader(b []byte) (h recordHeader, ok bool) {
	if binary.LittleEndian.Uint32(b[16:20]) != crc32.Checksum(b[4:16], castagnoli) {
		return recordHeader{}, false
	}
	h = recordHeader{
		crc:    binary.LittleEndian.Uint32(b[0:4]),
		length: int64(binary.LittleEndian.Uint32(b[4:8])),
		zxid:   int64(binary.LittleEndian.Uint64(b[8:16])),
	}
	if h.length > MaxPayloadBytes || h.zxid <= 0 {
		return recordHeader{}, false
	}
	return h, true
}

// recordCRC starts the record checksum from the verified header bytes; the
// caller continues it over the payload and compares with h.crc.
func recordCRC(hdr []byte) uint32 { return crc32.Update(0, castagnoli, hdr[4:20]) }
