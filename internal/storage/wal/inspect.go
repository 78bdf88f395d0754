package wal

import (
	"errors"
	"io"
	"os"
)

// Offline inspection: reading a log without opening it, so without the
// directory's lock and without repairing anything. It is for tools that
// look at the log of a stopped server (or of no server: a copy); a server
// writing the log meanwhile may show a torn tail that is only a write in
// progress.

// Record is one record of a log, as Records, ReplayRecords and Damaged
// report it.
type Record struct {
	// Segment is the path of the segment file the record is in, Offset
	// the byte offset where the record starts and PayloadOffset where its
	// payload does, after the record's header.
	Segment       string
	Offset        int64
	PayloadOffset int64
	Zxid          int64
	// Mask has bit k set when the record touches namespace k: what
	// AppendTagged stored, or MaskAll when the record is not Tagged.
	Mask uint64
	// Tagged: the record is in a format version 2 segment, which stores
	// a mask with every record.
	Tagged bool
	// Damaged: the record's header holds but its payload fails its
	// checksum, and Options.KeepDamaged kept it in place. Payload is then
	// nil.
	Damaged bool
	// Payload is the record's data. Records reuses it after the callback
	// returns; ReplayRecords does not.
	Payload []byte
}

// Records calls fn, in zxid order, for every record of the log in dir, and
// checks what Open checks as it goes: both checksums of every record, zxid
// order, and the chain of segment headers. At the first record or header
// that fails, after fn has seen every record before it, it returns a
// *CorruptError naming the file and offset, whether or not Open would cut
// it off as a torn tail (Check tells). An error from fn stops the reading
// and is returned as is.
func Records(dir string, fn func(Record) error) error {
	segs, err := listSegments(dir)
	if err != nil {
		return err
	}
	last := int64(-1)
	for i, seg := range segs {
		if last, err = recordsOf(seg, i == 0, last, fn); err != nil {
			return err
		}
	}
	return nil
}

// recordsOf reads the records of one segment; prevLast is the last zxid
// of the segment before it, which its header must name unless it is the
// first.
func recordsOf(seg segmentFile, first bool, prevLast int64, fn func(Record) error) (int64, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	h, err := readSegmentHeader(f, seg.path, seg.base)
	if err != nil {
		return 0, err
	}
	if !first && h.prev != prevLast {
		return 0, corrupt(seg.path, 0, "segment follows zxid %#x but the previous segment ends at %#x", h.prev, prevLast)
	}
	last := h.prev
	sc := newScanner(f, st.Size(), h.version, false)
	for {
		off := sc.off
		rh, payload, err := sc.next()
		if err == io.EOF {
			return last, nil
		}
		var bad *badRecord
		if errors.As(err, &bad) {
			return 0, corrupt(seg.path, bad.off, "%s", bad.reason)
		}
		if err != nil {
			return 0, err
		}
		if rh.zxid <= last {
			return 0, corrupt(seg.path, off, "zxid %#x does not follow %#x", rh.zxid, last)
		}
		last = rh.zxid
		r := Record{Segment: seg.path, Offset: off, PayloadOffset: off + int64(recordHeaderSize(h.version)), Zxid: rh.zxid,
			Mask: rh.mask, Tagged: h.version == versionTagged, Payload: payload}
		if err := fn(r); err != nil {
			return 0, err
		}
	}
}

// Report is what Check found in a log.
type Report struct {
	// Segments and Records count the segment files and their valid
	// records.
	Segments, Records int
	// After is the zxid the log starts after (the first segment's header):
	// 0 when it holds everything from the start, more once purged.
	After int64
	// LastZxid is the zxid of the last valid record (After when none).
	LastZxid int64
	// Tail is what Open would cut off the end of the newest segment (Bytes
	// is zero when nothing), which starts at TailOffset in TailFile.
	Tail       TailCut
	TailFile   string
	TailOffset int64
}

// Check validates the log in dir as Open does, without changing it. It
// returns a *CorruptError for damage Open refuses to repair (anywhere but
// a torn tail), and describes in Report.Tail a torn tail that Open would
// cut: what an interrupted write leaves, or, when Tail.Damaged, a whole
// record whose bytes changed at rest and which may have been acknowledged.
func Check(dir string) (Report, error) {
	segs, err := listSegments(dir)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	var prev segmentInfo
	for i, seg := range segs {
		info, err := validateSegment(seg, i == len(segs)-1, false)
		if err != nil {
			return Report{}, err
		}
		if i == 0 {
			rep.After = info.header.prev
		} else if err := checkChain(prev, info); err != nil {
			return Report{}, err
		}
		rep.Segments++
		rep.Records += info.records
		rep.LastZxid = info.lastZxid
		if info.size > info.end {
			rep.Tail = info.tailCut()
			rep.TailFile, rep.TailOffset = info.path, info.end
		}
		prev = info
	}
	return rep, nil
}
