package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Replay calls fn, in zxid order, for every record in the log with a zxid
// greater than fromZxid (the zxid of the snapshot being restored; 0 for
// everything). fn may keep payload. An error from fn stops the replay and
// is returned as is.
//
// Records appended but not yet synced are included. Every record is
// verified again while it is read; damage is reported as a *CorruptError,
// including a damaged record Options.KeepDamaged kept in place (read those
// with ReplayRecords). If records after fromZxid have been purged, Replay
// returns an error wrapping ErrPurged before calling fn at all.
//
// Replay holds the Log's lock throughout, so fn must not call methods of
// the same Log.
func (l *Log) Replay(fromZxid int64, fn func(zxid int64, payload []byte) error) error {
	return l.replay(fromZxid, false, func(r Record) error { return fn(r.Zxid, r.Payload) })
}

// ReplayRecords is Replay handing over whole records: with their place,
// namespace mask and format, and, on a log opened with
// Options.KeepDamaged, the damaged records kept in place (Damaged set,
// Payload nil) where they fall in zxid order. fn may keep r.Payload.
func (l *Log) ReplayRecords(fromZxid int64, fn func(r Record) error) error {
	return l.replay(fromZxid, l.opts.KeepDamaged, fn)
}

// replay runs Replay and ReplayRecords; keepDamaged hands a version 2
// record whose payload alone is damaged to fn instead of failing.
func (l *Log) replay(fromZxid int64, keepDamaged bool, fn func(Record) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if l.active != nil {
		if err := l.w.Flush(); err != nil {
			return l.fail(err)
		}
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	// Start at the newest segment that can hold fromZxid+1.
	start := 0
	for i, s := range segs {
		if s.base-1 <= fromZxid {
			start = i
		}
	}
	last := int64(-1)
	for i := start; i < len(segs); i++ {
		size := int64(-1)
		if segs[i].path == l.activePath && l.active != nil {
			size = l.size
		}
		last, err = replaySegment(segs[i], size, i == start, last, fromZxid, keepDamaged, fn)
		if err != nil {
			return err
		}
	}
	return nil
}

// replaySegment replays the records of one segment above fromZxid. size is
// the number of bytes to read, or -1 for the whole file. first says whether
// this is the first segment read; otherwise prevLast is the last zxid of
// the previous one, which the header must name.
func replaySegment(seg segmentFile, size int64, first bool, prevLast, fromZxid int64, keepDamaged bool, fn func(Record) error) (int64, error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if size < 0 {
		st, err := f.Stat()
		if err != nil {
			return 0, err
		}
		size = st.Size()
	}
	h, err := readSegmentHeader(f, seg.path, seg.base)
	if err != nil {
		return 0, err
	}
	switch {
	case first && fromZxid < h.prev:
		return 0, fmt.Errorf("%w: the log starts after zxid %#x (%s), replay needs everything after %#x",
			ErrPurged, h.prev, seg.path, fromZxid)
	case !first && h.prev != prevLast:
		return 0, corrupt(seg.path, 0, "segment follows zxid %#x but the previous segment ends at %#x", h.prev, prevLast)
	}
	last := h.prev
	sc := newScanner(f, size, h.version, true)
	for {
		off := sc.off
		rh, payload, err := sc.next()
		if err == io.EOF {
			return last, nil
		}
		r := Record{Segment: seg.path, Offset: off, Zxid: rh.zxid, Mask: rh.mask, Tagged: h.version == versionTagged, Payload: payload}
		var bad *badRecord
		if errors.As(err, &bad) {
			if !keepDamaged || !bad.keepable(h.version) {
				return 0, corrupt(seg.path, bad.off, "%s", bad.reason)
			}
			r = damagedRecord(seg.path, bad)
		} else if err != nil {
			return 0, err
		}
		if r.Zxid <= last {
			return 0, corrupt(seg.path, off, "zxid %#x out of order after %#x", r.Zxid, last)
		}
		last = r.Zxid
		if r.Zxid > fromZxid {
			if err := fn(r); err != nil {
				return 0, err
			}
		}
	}
}
