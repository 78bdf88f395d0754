package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// segmentInfo is what validating a segment found.
type segmentInfo struct {
	segmentFile
	header  segmentHeader
	records int
	// lastZxid is the zxid of the segment's last record (valid or kept
	// damaged), or header.prev when it holds none.
	lastZxid int64
	// end is the offset just past the last record kept.
	end int64
	// size is the file's size; bytes in [end, size) are a torn tail to cut.
	size int64
	// tornReason says why the tail is torn when size > end.
	tornReason string
	// tornRecord is the header of the first record of the torn tail, when
	// its checksum holds (tornRecordOK).
	tornRecord   recordHeader
	tornRecordOK bool
	// tornDamaged: the torn tail is a whole record whose bytes changed
	// after it was written, not what an interrupted write leaves (see
	// TailCut.Damaged).
	tornDamaged bool
	// kept lists the damaged records kept in place (Options.KeepDamaged).
	kept []Record
}

// tailCut describes the segment's torn tail as TailCut reports it.
func (info *segmentInfo) tailCut() TailCut {
	c := TailCut{Bytes: info.size - info.end, AfterZxid: info.lastZxid, Reason: info.tornReason, Damaged: info.tornDamaged, Mask: MaskAll}
	if info.tornRecordOK {
		c.Zxid, c.Mask = info.tornRecord.zxid, info.tornRecord.mask
	}
	return c
}

// validateSegment reads every record of seg, checking checksums and zxid
// order (every record's zxid is larger than the one before it, the first
// one larger than the header's prev). newest says whether seg is the last
// segment of the log: only there can a bad record be a torn tail, and only
// if nothing valid follows it. keepDamaged applies the rule of
// Options.KeepDamaged: a record of a version 2 segment whose header holds
// but whose payload does not, and which is not a torn tail, is kept in
// place and listed rather than failing. Everything else that fails is
// returned as a *CorruptError.
func validateSegment(seg segmentFile, newest, keepDamaged bool) (segmentInfo, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return segmentInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return segmentInfo{}, err
	}
	h, err := readSegmentHeader(f, seg.path, seg.base)
	if err != nil {
		return segmentInfo{}, err
	}
	info := segmentInfo{segmentFile: seg, header: h, lastZxid: h.prev, end: segmentHeaderSize, size: st.Size()}
	sc := newScanner(f, st.Size(), h.version, false)
	for {
		off := sc.off
		rh, _, err := sc.next()
		if err == io.EOF {
			return info, nil
		}
		var bad *badRecord
		if errors.As(err, &bad) {
			reason, err := classifyBadRecord(f, seg.path, h.version, bad, info.size, newest)
			var ce *CorruptError
			if errors.As(err, &ce) && keepDamaged && bad.keepable(h.version) {
				if bad.header.zxid <= info.lastZxid {
					return segmentInfo{}, corrupt(seg.path, off, "damaged record's zxid %#x does not follow %#x", bad.header.zxid, info.lastZxid)
				}
				info.kept = append(info.kept, damagedRecord(seg.path, bad))
				info.lastZxid = bad.header.zxid
				info.end = bad.next
				continue
			}
			if err != nil {
				return segmentInfo{}, err
			}
			info.tornReason = reason
			info.tornRecord, info.tornRecordOK = bad.header, bad.next >= 0
			if info.tornDamaged, err = wholeRecordDamaged(f, h.version, bad, info.size); err != nil {
				return segmentInfo{}, err
			}
			return info, nil
		}
		if err != nil {
			return segmentInfo{}, err
		}
		if rh.zxid <= info.lastZxid {
			return segmentInfo{}, corrupt(seg.path, off, "zxid %#x does not follow %#x", rh.zxid, info.lastZxid)
		}
		info.records++
		info.lastZxid = rh.zxid
		info.end = sc.off
	}
}

// damagedRecord describes a record whose payload alone is damaged.
func damagedRecord(path string, bad *badRecord) Record {
	return Record{Segment: path, Offset: bad.off, Zxid: bad.header.zxid, Mask: bad.header.mask, Tagged: true, Damaged: true}
}

// sectorBytes is the unit in which a disk persists writes atomically (at
// least; 4 KiB devices persist 512-byte-aligned runs too).
const sectorBytes = 512

// classifyBadRecord decides whether the bad record is a torn tail, which
// recovery may cut off (returning the reason to log), or corruption
// (returning a *CorruptError). Only the newest segment can have a torn
// tail: an older one was synced in full before its successor was created.
// In the newest segment, a bad record is torn when
//
//   - nothing valid follows it (this covers a partial header or payload at
//     the end of the file and a zero-filled remainder, where the file size
//     reached the disk before the data did); or
//   - it contains a whole zero sector, which is storage that was never
//     written: a crash during the fsync that would have covered it, with
//     the disk persisting later sectors before earlier ones. The records
//     after it were written by the same or a later batch, whose Sync did
//     not return either, so none of them was acknowledged. They are cut off
//     with it, and the warning names the first of them.
//
// Anything else (a bit flip or overwrite in a record with valid data after
// it) may be damage to an acknowledged record, and is corruption.
func classifyBadRecord(f *os.File, path string, version uint32, bad *badRecord, size int64, newest bool) (string, error) {
	if !newest {
		return "", corrupt(path, bad.off, "%s in a segment that is not the newest", bad.reason)
	}
	zero, err := allZero(f, bad.off, size)
	if err != nil {
		return "", err
	}
	if zero {
		return "zero-filled tail", nil
	}
	// When the bad record's header is intact its payload is skipped: bytes
	// inside a payload are client data and may look like anything.
	from := bad.next
	if from < 0 {
		from = bad.off + 1
	}
	off, zxid, found, err := findValidRecord(f, version, from, size)
	if err != nil {
		return "", err
	}
	if !found {
		return bad.reason, nil
	}
	sector, err := unwrittenSector(f, version, bad, off)
	if err != nil {
		return "", err
	}
	if sector >= 0 {
		return fmt.Sprintf("%s with a never-written (zero) sector at offset %d; the valid records after it, from zxid %#x at offset %d, were never synced either",
			bad.reason, sector, zxid, off), nil
	}
	return "", corrupt(path, bad.off, "%s, but a valid record (zxid %#x) follows at offset %d", bad.reason, zxid, off)
}

// wholeRecordDamaged reports whether the bad record at the end of the
// file is all there, with bytes that changed after they were written: its
// header (and, when the header holds, its payload) lies inside the file,
// and no part of it that starts or ends at a sector boundary is zero. An
// interrupted write leaves the record short or some of its sectors unwritten
// (zero); a record that is whole and still fails its checksum was damaged at
// rest, and may have been acknowledged.
func wholeRecordDamaged(f io.ReaderAt, version uint32, bad *badRecord, size int64) (bool, error) {
	end := bad.next
	if end < 0 {
		end = bad.off + int64(recordHeaderSize(version))
	}
	if end > size {
		return false, nil // short: the write did not finish
	}
	if zero, err := allZero(f, bad.off, end); err != nil || zero {
		return false, err // never written
	}
	for s := (bad.off/sectorBytes + 1) * sectorBytes; s < end; s += sectorBytes {
		for _, r := range [][2]int64{{max(bad.off, s-sectorBytes), s}, {s, min(end, s+sectorBytes)}} {
			zero, err := allZero(f, r[0], r[1])
			if err != nil {
				return false, err
			}
			if zero {
				return false, nil
			}
		}
	}
	return true, nil
}

// unwrittenSector returns the offset of a sector-aligned run of
// sectorBytes zero bytes that starts inside the bad record and ends before
// the next valid record, or -1 if there is none. A record's extent is known
// when its header checksum holds; otherwise the damage must reach into the
// header itself.
func unwrittenSector(f io.ReaderAt, version uint32, bad *badRecord, nextValid int64) (int64, error) {
	limit := bad.next
	if limit < 0 {
		limit = bad.off + int64(recordHeaderSize(version))
	}
	for s := (bad.off + sectorBytes - 1) / sectorBytes * sectorBytes; s < limit && s+sectorBytes <= nextValid; s += sectorBytes {
		zero, err := allZero(f, s, s+sectorBytes)
		if err != nil {
			return 0, err
		}
		if zero {
			return s, nil
		}
	}
	return -1, nil
}

// checkChain verifies that cur continues prev: its header names prev's last
// zxid as the one before it. A mismatch means a segment is missing or
// stale. (An empty segment can only be the newest: its successor would
// follow the same zxid and so have the same name.)
func checkChain(prev, cur segmentInfo) error {
	if cur.header.prev != prev.lastZxid {
		return corrupt(cur.path, 0, "segment follows zxid %#x but the previous segment %s ends at %#x", cur.header.prev, prev.path, prev.lastZxid)
	}
	return nil
}

// formatZxid renders a zxid the way ZooKeeper logs do.
func formatZxid(z int64) string { return fmt.Sprintf("%#x", z) }
