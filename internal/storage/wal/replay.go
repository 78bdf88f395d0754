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
// verified again while it is read; damage is reported as a *CorruptError.
// If records after fromZxid have been purged, Replay returns an error
// wrapping ErrPurged before calling fn at all.
//
// Replay holds the Log's lock throughout, so fn must not call methods of
// the same Log.
func (l *Log) Replay(fromZxid int64, fn func(zxid int64, payload []byte) error) error {
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
		last, err = replaySegment(segs[i], size, i == start, last, fromZxid, fn)
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
func replaySegment(seg segmentFile, size int64, first bool, prevLast, fromZxid int64, fn func(int64, []byte) error) (int64, error) {
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
	sc := newScanner(f, size, true)
	for {
		off := sc.off
		zxid, payload, err := sc.next()
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
		if zxid <= last {
			return 0, corrupt(seg.path, off, "zxid %#x out of order after %#x", zxid, last)
		}
		last = zxid
		if zxid > fromZxid {
			if err := fn(zxid, payload); err != nil {
				return 0, err
			}
		}
	}
}
