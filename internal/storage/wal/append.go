package wal

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// Append adds a record that may touch any namespace: it is
// AppendTagged(zxid, MaskAll, payload).
func (l *Log) Append(zxid int64, payload []byte) error {
	return l.AppendTagged(zxid, MaskAll, payload)
}

// AppendTagged adds a record whose payload touches the namespaces whose
// bits are set in mask (bit k for namespace k; 0 when it touches none).
// On a log opened without Options.Tagged the mask is not stored and the
// record reads back with MaskAll.
//
// It only buffers: the record is durable once a Sync that starts after
// AppendTagged returns has returned nil. zxid must be positive and greater
// than every zxid already in the log. A payload may be empty; it must not
// exceed MaxPayloadBytes. The log does not retain payload.
//
// When the active segment would grow past Options.SegmentBytes, or has
// the other format version, AppendTagged first syncs it and starts a new
// one, so an append can occasionally take as long as an fsync.
func (l *Log) AppendTagged(zxid int64, mask uint64, payload []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	version := l.opts.version()
	hs := recordHeaderSize(version)
	n := int64(hs + len(payload))
	for {
		if err := l.usable(); err != nil {
			return err
		}
		if zxid <= 0 || zxid <= l.lastZxid {
			return fmt.Errorf("%w: append %#x after %#x", ErrZxidOrder, zxid, l.lastZxid)
		}
		if len(payload) > MaxPayloadBytes {
			return fmt.Errorf("%w: %d bytes (limit %d)", ErrTooLarge, len(payload), MaxPayloadBytes)
		}
		if l.active != nil && l.activeVersion == version && (l.size == segmentHeaderSize || l.size+n <= l.opts.SegmentBytes) {
			break
		}
		if !l.syncing {
			if err := l.rotate(); err != nil {
				return err
			}
			break
		}
		// Rotation replaces the file an fsync is running on; wait for it,
		// then check again, since others may have appended meanwhile.
		l.syncDone.Wait()
	}
	var buf [recordHeaderSizeTagged]byte
	hdr := buf[:hs]
	putRecordHeader(hdr, zxid, mask, payload)
	if _, err := l.w.Write(hdr); err != nil {
		return l.fail(err)
	}
	if _, err := l.w.Write(payload); err != nil {
		return l.fail(err)
	}
	l.size += n
	l.dirty = true
	if w := l.opts.Written; w != nil {
		w.Add(uint64(n))
	}
	l.lastZxid = zxid
	return nil
}

// rotate seals the active segment and starts a new one, of the format
// version the options choose, after the last record. The old segment is
// synced before the new one exists: Open treats a bad record in any
// segment but the newest as corruption, so a segment may be followed by
// another only once all of it is durable. An active segment that holds no
// record (rotated away from only because its version differs) has the new
// segment's name; the new one replaces it atomically, so a crash leaves
// one or the other. Callers hold mu and made sure no fsync runs.
func (l *Log) rotate() error {
	replace := false
	if l.active != nil {
		if err := l.flushAndSync(); err != nil {
			return err
		}
		if err := l.active.Close(); err != nil {
			return l.fail(err)
		}
		l.active = nil
		replace = l.size == segmentHeaderSize
	}
	h := segmentHeader{version: l.opts.version(), prev: l.lastZxid}
	f, path, err := createSegment(l.dir, h, replace, l.opts.NoSync)
	if err != nil {
		return l.fail(err)
	}
	l.setActive(f, path, h.version, segmentHeaderSize)
	return nil
}

// Flush hands every record appended so far to the operating system
// (write(2)) without making it durable: once it returns, the records
// survive the process being killed, but not the machine losing power
// before a Sync. It returns at once when nothing is buffered.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	if l.active == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return l.fail(err)
	}
	return nil
}

// Sync makes every record appended before the call durable. It flushes the
// buffer under the lock but runs the fsync without it, so other goroutines
// may Append meanwhile (those records are covered by the next Sync).
// Concurrent Syncs run their fsyncs one at a time. If nothing was appended
// since the last fsync, Sync returns at once.
func (l *Log) Sync() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSync()
	if err := l.usable(); err != nil {
		return err
	}
	if l.active == nil {
		return nil
	}
	if err := l.w.Flush(); err != nil {
		return l.fail(err)
	}
	if !l.dirty {
		return nil
	}
	l.dirty = false
	if l.opts.NoSync {
		return nil
	}
	f := l.active
	l.syncing = true
	l.mu.Unlock()
	err := fsutil.SyncData(f)
	l.mu.Lock()
	l.syncing = false
	l.syncDone.Broadcast()
	if err != nil {
		return l.fail(err)
	}
	return nil
}

// StartAfter makes an empty log begin after zxid: its first segment names
// zxid as the record before it, as if the log up to zxid had been purged.
// A state installed from elsewhere at zxid (a restored snapshot) has no
// history in this log, and replay from before zxid must fail with
// ErrPurged rather than rebuild a state without it. It fails on a log
// that holds a segment already.
func (l *Log) StartAfter(zxid int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.usable(); err != nil {
		return err
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	if len(segs) > 0 || l.active != nil {
		return fmt.Errorf("wal: StartAfter on a log that has segments")
	}
	if zxid < 0 {
		return fmt.Errorf("wal: StartAfter(%d): %w", zxid, ErrZxidOrder)
	}
	l.lastZxid = zxid
	return l.rotate()
}
