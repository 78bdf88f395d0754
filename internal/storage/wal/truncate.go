package wal

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// TruncateAfter durably removes every record with a zxid greater than zxid:
// when it returns nil, a crash cannot bring them back, and the next Append
// may reuse their zxids. Group Paxos acceptors use it to drop an
// uncommitted suffix. Whole segments are deleted newest first, so a crash
// in the middle leaves a shorter but valid log, and calling TruncateAfter
// again finishes the job. Truncating below the point a purge removed
// records up to is refused with an error wrapping ErrPurged: those records
// cannot be dropped, they are already gone, and the log would no longer
// know where it starts.
func (l *Log) TruncateAfter(zxid int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSync()
	if err := l.usable(); err != nil {
		return err
	}
	if zxid < 0 {
		return fmt.Errorf("wal: truncate after negative zxid %d", zxid)
	}
	if zxid >= l.lastZxid {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return l.fail(err)
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	if len(segs) == 0 {
		return fmt.Errorf("wal: log ends at %#x but %s holds no segment", l.lastZxid, l.dir)
	}
	if start := segs[0].base - 1; zxid < start {
		return fmt.Errorf("%w: cannot truncate after %#x, the log starts after %#x", ErrPurged, zxid, start)
	}
	// From here on a failure leaves memory and disk out of step, so it is
	// sticky: the log must be reopened, which recovers from the disk.
	if err := l.truncateAfter(segs, zxid); err != nil {
		return l.fail(err)
	}
	return nil
}

// truncateAfter deletes the segments holding only records above zxid,
// newest first, and cuts the newest remaining one after its last record not
// above zxid. The oldest segment is never deleted, only cut down to its
// header if need be, because its header records where the log starts.
func (l *Log) truncateAfter(segs []segmentFile, zxid int64) error {
	keep := len(segs)
	for keep > 1 && segs[keep-1].base-1 >= zxid {
		keep--
		if segs[keep].path == l.activePath && l.active != nil {
			if err := l.active.Close(); err != nil {
				return err
			}
			l.active = nil
		}
		if err := os.Remove(segs[keep].path); err != nil {
			return err
		}
		l.logger.Info("wal: truncate removed segment", "file", segs[keep].path, "after_zxid", formatZxid(zxid))
	}
	if keep < len(segs) && !l.opts.NoSync {
		if err := fsutil.SyncDir(l.dir); err != nil {
			return err
		}
	}
	seg := segs[keep-1]
	end, last, version, err := endAfter(seg, zxid, l.opts.KeepDamaged)
	if err != nil {
		return err
	}
	if l.active != nil && l.activePath != seg.path {
		return fmt.Errorf("wal: active segment %s is not the newest segment %s", l.activePath, seg.path)
	}
	if l.active == nil {
		f, err := os.OpenFile(seg.path, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return err
		}
		l.setActive(f, seg.path, version, end)
	}
	if err := l.active.Truncate(end); err != nil {
		return err
	}
	if !l.opts.NoSync {
		if err := l.active.Sync(); err != nil {
			return err
		}
	}
	l.size = end
	l.dirty = false
	l.lastZxid = last
	l.damaged = slices.DeleteFunc(l.damaged, func(r Record) bool { return r.Zxid > last })
	return nil
}

// endAfter returns the offset just past the last record of seg with a zxid
// not greater than zxid, that record's zxid, and the segment's format
// version. keepDamaged passes over a version 2 record whose payload alone
// is damaged (Options.KeepDamaged kept it) as over a valid one.
func endAfter(seg segmentFile, zxid int64, keepDamaged bool) (end, last int64, version uint32, err error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, 0, err
	}
	h, err := readSegmentHeader(f, seg.path, seg.base)
	if err != nil {
		return 0, 0, 0, err
	}
	end, last = segmentHeaderSize, h.prev
	sc := newScanner(f, st.Size(), h.version, false)
	for {
		rh, _, err := sc.next()
		var bad *badRecord
		if errors.As(err, &bad) {
			if !keepDamaged || !bad.keepable(h.version) {
				return 0, 0, 0, corrupt(seg.path, bad.off, "%s", bad.reason)
			}
			rh, err = bad.header, nil
		}
		if err == io.EOF || (err == nil && rh.zxid > zxid) {
			return end, last, h.version, nil
		}
		if err != nil {
			return 0, 0, 0, err
		}
		end, last = sc.off, rh.zxid
	}
}
