package wal

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// DefaultSegmentBytes is the segment size used when Options.SegmentBytes is
// zero, ZooKeeper's preAllocSize-sized log files.
const DefaultSegmentBytes = 64 << 20

// writeBufferBytes is the size of the buffer between Append and the file.
const writeBufferBytes = 256 << 10

// Options configures a Log.
type Options struct {
	// SegmentBytes is the size at which the log starts a new segment file.
	// A segment is never split below one record, so a record larger than
	// SegmentBytes gets a segment of its own. Zero means
	// DefaultSegmentBytes.
	SegmentBytes int64
	// Logger receives recovery warnings and purge notices. Nil means
	// slog.Default().
	Logger *slog.Logger
	// NoSync skips every fsync (ZooKeeper's forceSync=no). Writes then
	// survive a process crash but not a power failure or kernel crash, so
	// acknowledged writes can be lost; it is for tests, benchmarks and
	// deployments that accept that.
	NoSync bool
	// Tagged makes the log write format version 2, whose records carry a
	// namespace mask (AppendTagged) covered by the header checksum, so
	// that the mask of a record whose payload is damaged is still known.
	// A log written without Tagged has format version 1, records without
	// a mask. Each segment has one version and reading handles both. The
	// first append after Open goes to a new segment when the newest one
	// has the other version, so every record appended by a tagged Log
	// carries its mask.
	Tagged bool
	// KeepDamaged changes one recovery rule, for version 2 records only:
	// a record whose header checksum holds but whose payload checksum
	// fails, and which is not a torn tail (valid records follow it, or it
	// is in a segment other than the newest), is kept in place rather
	// than failing Open with a *CorruptError. Its zxid must still fall
	// between its neighbours'. Damaged lists such records and
	// ReplayRecords hands them over with Damaged set; what the lost
	// payload means is the caller's to decide.
	KeepDamaged bool
	// Written, when set, has the size of every record appended (its
	// header and payload) added to it as the record is buffered: how
	// many bytes the log writes, for a server's metrics. It is shared
	// with whoever reads it and survives the Log, so a counter kept
	// across reopenings of the same directory stays monotonic.
	Written *atomic.Uint64
}

// version is the format version of the segments the log creates.
func (o Options) version() uint32 {
	if o.Tagged {
		return versionTagged
	}
	return versionPlain
}

// Log is an open transaction log. See the package documentation for the
// durability contract and the concurrency rules.
type Log struct {
	dir     string
	opts    Options
	logger  *slog.Logger
	release func() error // drops the directory lock

	mu sync.Mutex
	// syncDone is signalled when an fsync running without mu finishes.
	syncDone *sync.Cond
	// syncing is true while Sync runs its fsync without holding mu. Whoever
	// needs to replace or close the active file waits for it to clear.
	syncing bool
	// err is sticky: once a write or fsync fails, every call returns it.
	err    error
	closed bool

	// active is the newest segment, open for appending; nil while the log
	// holds no segment at all.
	active     *os.File
	activePath string
	// activeVersion is the format version of the active segment.
	activeVersion uint32
	w             *bufio.Writer
	// size is the length of the active segment, buffered bytes included.
	size int64
	// dirty is true when bytes were appended since the last fsync started.
	dirty    bool
	lastZxid int64
	// cut is what Open cut off the newest segment, if anything.
	cut TailCut
	// damaged lists the damaged records kept in place
	// (Options.KeepDamaged), in zxid order.
	damaged []Record
}

// TailCut describes the torn tail Open cut off the log.
type TailCut struct {
	// Bytes dropped from the end of the newest segment; zero when nothing
	// was cut.
	Bytes int64
	// AfterZxid is the last record kept.
	AfterZxid int64
	// Reason says what was wrong.
	Reason string
	// Damaged: the first record cut was whole, with bytes that changed
	// after they were written (a bit flip at rest, not an interrupted
	// write), so it may have been synced and acknowledged. The log cannot
	// tell which; its user, which may have promised that record to others,
	// must treat it as lost acknowledged state.
	Damaged bool
	// Zxid and Mask are the first cut record's zxid and namespace mask
	// when its header checksum held (Zxid > 0); Mask is MaskAll for a
	// version 1 record. When the header did not hold, Zxid is 0 and Mask
	// is MaskAll: the cut bytes may have been any record.
	Zxid int64
	Mask uint64
}

// Cut returns what Open cut off the log (Bytes is zero when nothing).
func (l *Log) Cut() TailCut { return l.cut }

// Damaged returns the damaged records Open kept in place under
// Options.KeepDamaged (and that no TruncateAfter or PurgeBefore has
// removed since), in zxid order: each with its place, zxid and mask,
// Damaged set and no payload. It is empty without KeepDamaged. A kept
// record that ends up last in the newest segment is cut, as a damaged
// last record, at the next Open (Cut names it).
func (l *Log) Damaged() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.damaged...)
}

// Open opens the log in dir, creating the directory if needed, and
// recovers it: it validates every segment, cuts a torn tail off the newest
// one (logging a warning), and returns a *CorruptError for damage anywhere
// else. The returned Log appends after the last valid record.
func Open(dir string, opts Options) (*Log, error) {
	if opts.SegmentBytes == 0 {
		opts.SegmentBytes = DefaultSegmentBytes
	}
	if opts.SegmentBytes < segmentHeaderSize+int64(recordHeaderSize(opts.version())) {
		return nil, fmt.Errorf("wal: SegmentBytes %d is too small", opts.SegmentBytes)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if err := fsutil.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	key, err := registerOpen(dir)
	if err != nil {
		return nil, err
	}
	release, err := fsutil.Lock(filepath.Join(dir, lockName))
	if err != nil {
		unregisterOpen(key)
		return nil, fmt.Errorf("wal: opening %s: %w", dir, err)
	}
	l := &Log{dir: dir, opts: opts, logger: opts.Logger, release: release}
	l.syncDone = sync.NewCond(&l.mu)
	if err := l.recover(); err != nil {
		l.closeFiles()
		unregisterOpen(key)
		return nil, err
	}
	registerLog(key, l)
	return l, nil
}

// recover validates the directory's segments, repairs a torn tail and
// opens the newest segment for appending.
func (l *Log) recover() error {
	temps, err := listTemps(l.dir)
	if err != nil {
		return err
	}
	for _, t := range temps {
		// A temporary segment was never renamed into place, so it holds no
		// record (records are appended only after the rename).
		l.logger.Warn("wal: removing segment whose creation was interrupted", "file", t)
		if err := os.Remove(t); err != nil {
			return err
		}
	}
	segs, err := listSegments(l.dir)
	if err != nil {
		return err
	}
	infos := make([]segmentInfo, 0, len(segs))
	for i, seg := range segs {
		info, err := validateSegment(seg, i == len(segs)-1, l.opts.KeepDamaged)
		if err != nil {
			return err
		}
		if i > 0 {
			if err := checkChain(infos[i-1], info); err != nil {
				return err
			}
		}
		for _, r := range info.kept {
			l.logger.Error("wal: keeping a damaged record in place (its header holds, its payload fails its checksum)",
				"file", r.Segment, "offset", r.Offset, "zxid", formatZxid(r.Zxid), "mask", fmt.Sprintf("%#x", r.Mask))
		}
		l.damaged = append(l.damaged, info.kept...)
		infos = append(infos, info)
	}
	if n := len(infos); n > 0 && infos[n-1].size > infos[n-1].end {
		if err := l.cutTornTail(&infos[n-1]); err != nil {
			return err
		}
	}
	if len(temps) > 0 && !l.opts.NoSync {
		if err := fsutil.SyncDir(l.dir); err != nil {
			return err
		}
	}
	if n := len(infos); n > 0 {
		newest := infos[n-1]
		if err := l.openActive(newest.path, newest.header.version, newest.end); err != nil {
			return err
		}
		l.lastZxid = newest.lastZxid
	}
	return nil
}

// cutTornTail truncates the newest segment after its last valid record and
// makes the truncation durable.
func (l *Log) cutTornTail(info *segmentInfo) error {
	l.cut = info.tailCut()
	if l.cut.Damaged {
		l.logger.Error("wal: cutting a damaged record off the end of the log (whole, with a bad checksum: it may have been acknowledged)",
			"file", info.path, "offset", info.end, "bytes_dropped", info.size-info.end,
			"reason", info.tornReason, "last_zxid", formatZxid(info.lastZxid),
			"cut_zxid", formatZxid(l.cut.Zxid), "cut_mask", fmt.Sprintf("%#x", l.cut.Mask))
	} else {
		l.logger.Warn("wal: cutting torn tail of the log (a write interrupted by a crash, never acknowledged)",
			"file", info.path, "offset", info.end, "bytes_dropped", info.size-info.end,
			"reason", info.tornReason, "last_zxid", formatZxid(info.lastZxid))
	}
	f, err := os.OpenFile(info.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(info.end)
	if err == nil && !l.opts.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	info.size = info.end
	return nil
}

// openActive makes the segment at path, of the given format version and
// whose valid data ends at size, the one Append writes to.
func (l *Log) openActive(path string, version uint32, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	if st.Size() != size {
		f.Close()
		return fmt.Errorf("wal: %s is %d bytes, expected %d", path, st.Size(), size)
	}
	l.setActive(f, path, version, size)
	return nil
}

func (l *Log) setActive(f *os.File, path string, version uint32, size int64) {
	l.active, l.activePath, l.activeVersion, l.size = f, path, version, size
	if l.w == nil {
		l.w = bufio.NewWriterSize(f, writeBufferBytes)
	} else {
		l.w.Reset(f)
	}
}

// LastZxid returns the zxid of the last record appended (durable or not).
// When the log holds no record it returns the zxid the log starts after: 0
// for a new log, or the point a TruncateAfter emptied a purged log to.
func (l *Log) LastZxid() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastZxid
}

// usable returns the error every call must return once the log is closed
// or has failed. Callers hold mu.
func (l *Log) usable() error {
	if l.closed {
		return ErrClosed
	}
	return l.err
}

// fail records err as the log's sticky error and returns it.
func (l *Log) fail(err error) error {
	if l.err == nil {
		l.err = fmt.Errorf("wal: log failed, restart to recover: %w", err)
	}
	return l.err
}

// waitSync blocks until no fsync runs outside the lock. Callers hold mu.
func (l *Log) waitSync() {
	for l.syncing {
		l.syncDone.Wait()
	}
}

// Close flushes and syncs what was appended, closes the files and releases
// the directory. Further calls return ErrClosed.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waitSync()
	if l.closed {
		return ErrClosed
	}
	var err error
	if l.err == nil && l.active != nil {
		err = l.flushAndSync()
	}
	l.closed = true
	err = errors.Join(err, l.closeFiles())
	unregisterOpen(registryKey(l.dir))
	return err
}

// closeFiles closes the active segment and releases the directory lock.
func (l *Log) closeFiles() error {
	var err error
	if l.active != nil {
		err = l.active.Close()
		l.active = nil
	}
	if l.release != nil {
		err = errors.Join(err, l.release())
		l.release = nil
	}
	return err
}

// flushAndSync writes out the buffer and fsyncs the active segment while
// holding mu. Callers hold mu, made sure no fsync runs, and checked usable.
func (l *Log) flushAndSync() error {
	if err := l.w.Flush(); err != nil {
		return l.fail(err)
	}
	if l.dirty && !l.opts.NoSync {
		if err := fsutil.SyncData(l.active); err != nil {
			return l.fail(err)
		}
	}
	l.dirty = false
	return nil
}
