package wal

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/giraffe-coord/giraffe/internal/storage/internal/fsutil"
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
	size := int64(-1) // the whole file, unless it is the active one
	if l.active != nil && l.activePath == seg.path {
		size = l.size
	}
	end, last, err := endAfter(seg, size, zxid)
	if err != nil {
		return err
	}
	if l.active != nil && l.activePath != seg.path {
		return fmt.Errorf("wal: active segment %s is not the newest segment %s", l.activePath, seg.path)
	}
	if l.active == nil {
		f, err := os.OpenFile(seg.path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		l.setActive(f, seg.path, end)
		if err := l.active.Truncate(end); err != nil {
			return err
		}
	} else if err := l.zeroFrom(end); err != nil {
		return err
	}
	if _, err := l.active.Seek(end, io.SeekStart); err != nil {
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
	return nil
}

// endAfter returns the offset just past the last record of seg with a zxid
// not greater than zxid, and that record's zxid. size is where seg's
// records end (the active segment's, before the zeros written ahead), or -1
// for the whole file.
func endAfter(seg segmentFile, size, zxid int64) (end, last int64, err error) {
	f, err := os.Open(seg.path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	h, err := readSegmentHeader(f, seg.path, seg.base)
	if err != nil {
		return 0, 0, err
	}
	end, last = segmentHeaderSize, h.prev
	if size < 0 {
		size = st.Size()
	}
	sc := newScanner(f, size, false)
	for {
		z, _, err := sc.next()
		if err == io.EOF || (err == nil && z > zxid) {
			return end, last, nil
		}
		var bad *badRecord
		if errors.As(err, &bad) {
			return 0, 0, corrupt(seg.path, bad.off, "%s", bad.reason)
		}
		if err != nil {
			return 0, 0, err
		}
		end, last = sc.off, z
	}
}

// zeroFrom drops the active segment's records from end on by writing zeros
// over them, so that nothing of them is left for a later recovery to find.
// Where zeros were written ahead (alloc > size) this keeps the file's
// length and blocks, which truncating would free only for reserve to
// allocate them again (two journal commits and a flush of the zeros on the
// way to the next acknowledgment); otherwise the file is cut.
func (l *Log) zeroFrom(end int64) error {
	if l.alloc == l.size {
		if err := l.active.Truncate(end); err != nil {
			return err
		}
		l.alloc = end
		return nil
	}
	for off := end; off < l.size; {
		n := min(int64(len(zeroBlock)), l.size-off)
		if _, err := l.active.WriteAt(zeroBlock[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}
