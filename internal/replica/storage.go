package replica

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// storage is the durable state of one replica in its data directory:
//
//	identity    who the directory is (identity.go), written first
//	log/        the accepted entries (package wal; record zxid = entry zxid,
//	            payload = entry type byte + data)
//	snapshots/  application snapshots (package snap; named by their index)
//	hardstate   the node's HardState and the log's base, replaced atomically
//	clean       present only while the replica is stopped after a clean stop
//	resync      present when the server found its state wrong while running
//	            (MarkForResync): the next start sets the state aside
//	lost-*/     state found damaged at some start, set aside for inspection
type storage struct {
	dir    string
	log    *wal.Log
	noSync bool
	logger *slog.Logger
	// written counts the bytes appended to the log (Config.LogWritten).
	written *atomic.Uint64
	saved   gpaxos.HardState
	// base is the index of the newest snapshot installed from another
	// server: the log holds nothing of this history before it, so no
	// older snapshot may stand in for it after a crash.
	base gpaxos.Zxid
	id   identity
	// onSync, if set, hears of every fsync of the log (Config.OnSync).
	onSync func(entries int, took time.Duration)
	// skipSync, if set, says of a proposal's body whether a Ready holding
	// only such proposals may skip its fsync (Config.SkipSync).
	skipSync func(body []byte) bool
	// stall is a delay injected before the next fsyncs (Replica.StallFsync).
	stall stall
	// snapMu serializes the saves of snapshots to snapDir (snap.Save
	// removes the temporary files of other saves): the application's own,
	// from its goroutine, and those received from other servers, from the
	// persisting one.
	snapMu sync.Mutex
}

// stall delays fsyncs, as a disk that stops answering for a while does:
// the next count fsyncs of the log each wait d first. It is set from
// another goroutine (the fault-injection endpoint).
type stall struct {
	mu    sync.Mutex
	d     time.Duration
	count int
}

// take returns how long the fsync about to run must wait.
func (st *stall) take() time.Duration {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.count == 0 {
		return 0
	}
	st.count--
	return st.d
}

// LogDir returns where the replica whose directory is dir keeps its log
// (package wal), for tools that read it offline.
func LogDir(dir string) string { return filepath.Join(dir, "log") }

// recovered is what storage held at open.
type recovered struct {
	hs      gpaxos.HardState
	snap    *gpaxos.Snapshot
	entries []gpaxos.Entry
	// lost, when not empty, says why the durable state was found damaged
	// and set aside: the replica starts empty, as a new incarnation that
	// must be registered before it votes.
	lost string
}

func (s *storage) snapDir() string   { return SnapshotDir(s.dir) }
func (s *storage) logDir() string    { return LogDir(s.dir) }
func (s *storage) hsPath() string    { return filepath.Join(s.dir, "hardstate") }
func (s *storage) idPath() string    { return filepath.Join(s.dir, "identity") }
func (s *storage) cleanPath() string { return filepath.Join(s.dir, "clean") }

func (s *storage) resyncPath() string { return resyncPath(s.dir) }

func resyncPath(dir string) string { return filepath.Join(dir, "resync") }

// MarkForResync records, durably, that the replica in dir holds state the
// ensemble does not (a digest that disagrees with a majority's): its next
// start sets the state aside and starts empty as a new incarnation in
// recovery, which the ensemble registers anew and sends its state. why is
// kept in the marker and logged then.
func MarkForResync(dir, why string) error {
	return fsutil.WriteFileAtomic(resyncPath(dir), []byte(why), false)
}

// openStorage opens (creating when new) the storage of server in dir and
// reads what it holds. voters is the configuration recorded with snapshots
// written before snapshots recorded their own.
//
// It checks that the state is what this replica promised others it is,
// and when it is not (a hard state missing beside a log, a record damaged
// at rest at the end of the log, a tail cut after a clean stop, a snapshot
// older than the log's base) it sets the state aside and starts empty as a
// new incarnation in recovery (gpaxos.Config.Recovering): it may have
// acknowledged entries and made promises that are gone. written, if not
// nil, counts the bytes appended to the log (Config.LogWritten).
func openStorage(dir string, noSync bool, logger *slog.Logger, voters quorum.Config, server gpaxos.ID, written *atomic.Uint64) (*storage, recovered, error) {
	s := &storage{dir: dir, noSync: noSync, logger: logger, written: written}
	for _, d := range []string{dir, s.snapDir(), s.logDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, recovered{}, err
		}
	}
	clean, err := s.takeCleanMarker()
	if err != nil {
		return nil, recovered{}, err
	}
	id, found, err := readIdentity(s.idPath())
	lost := ""
	if err != nil {
		lost = fmt.Sprintf("identity unreadable: %v", err)
	} else if found && id.Server != uint64(server) {
		return nil, recovered{}, fmt.Errorf("%s belongs to server %d, not %d", dir, id.Server, server)
	}
	if why, err := os.ReadFile(s.resyncPath()); err == nil {
		lost = fmt.Sprintf("marked for a resync from the ensemble: %s", why)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, recovered{}, err
	}
	rec, hsFound, err := s.load(voters)
	var damaged *damagedError
	if errors.As(err, &damaged) {
		if lost == "" {
			lost = damaged.Error()
		}
		hsFound, err = true, nil
	}
	if err != nil {
		return nil, rec, err
	}
	var cut wal.TailCut
	if s.log != nil {
		cut = s.log.Cut()
	}
	switch {
	case lost != "":
	case !hsFound && (found || len(rec.entries) > 0 || rec.snap != nil):
		lost = "the hard state is missing"
	case cut.Damaged:
		lost = fmt.Sprintf("a record after %#x was damaged at rest (%s)", cut.AfterZxid, cut.Reason)
	case clean && cut.Bytes > 0:
		lost = fmt.Sprintf("the log lost %d bytes after %#x although the replica stopped cleanly (%s)", cut.Bytes, cut.AfterZxid, cut.Reason)
	case s.base != 0 && (rec.snap == nil || rec.snap.Index < s.base):
		lost = fmt.Sprintf("the snapshot at %v, which the log starts after, is unreadable", s.base)
	}
	if !found || lost != "" {
		id = identity{Server: uint64(server), Incarnation: newIncarnation()}
	}
	if lost != "" {
		if err := s.setAside(lost); err != nil {
			return nil, recovered{}, err
		}
		id.Recovering = true
		if rec, _, err = s.load(voters); err != nil {
			return nil, rec, err
		}
		rec.lost = lost
	}
	id.Boots++
	s.id = id
	if err := writeIdentity(s.idPath(), id); err != nil {
		s.log.Close()
		return nil, rec, err
	}
	if !hsFound || lost != "" {
		// A hard state exists from the first start on, so that a missing
		// one always means a lost one.
		if err := s.writeHardState(rec.hs); err != nil {
			s.log.Close()
			return nil, rec, err
		}
	}
	return s, rec, nil
}

// load reads the hard state, the newest snapshot and the log after it. A
// damaged hard state is returned as a *damagedError after the rest is
// loaded (the log is then open), so that the caller can set it all aside.
func (s *storage) load(voters quorum.Config) (rec recovered, hsFound bool, err error) {
	hs, base, hsFound, hsErr := readHardState(s.hsPath())
	var damaged *damagedError
	if hsErr != nil && !errors.As(hsErr, &damaged) {
		return rec, false, hsErr
	}
	rec.hs, s.saved, s.base = hs, hs, base
	idx, found, err := snap.LoadNewest(s.snapDir(), func(z int64, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		v, body, err := splitSnapshot(data)
		if err != nil {
			return err
		}
		if len(v.Groups) == 0 {
			v = voters // written before snapshots recorded their configuration
		}
		rec.snap = &gpaxos.Snapshot{Index: gpaxos.Zxid(z), Voters: v, Data: body}
		return nil
	}, snap.WithLogger(s.logger))
	var snapErr error
	if errors.Is(err, snap.ErrNoValidSnapshot) {
		// Every snapshot is damaged: the state they hold is lost here.
		snapErr, rec.snap, found = &damagedError{err.Error()}, nil, false
	} else if err != nil {
		return rec, false, fmt.Errorf("loading snapshot: %w", err)
	}
	lg, err := wal.Open(s.logDir(), wal.Options{Logger: s.logger, NoSync: s.noSync, Written: s.written})
	var corrupt *wal.CorruptError
	if errors.As(err, &corrupt) {
		// A record damaged anywhere but in a torn tail may have been
		// acknowledged to the leader: the log no longer holds what this
		// server promised, which only the ensemble can give back.
		rec.snap = nil
		return rec, hsFound, &damagedError{fmt.Sprintf("the log is corrupt (%v)", corrupt)}
	}
	if err != nil {
		return rec, false, fmt.Errorf("opening log: %w", err)
	}
	s.log = lg
	from := int64(0)
	if found {
		from = idx
	}
	err = lg.Replay(from, func(z int64, payload []byte) error {
		if len(payload) < 1 {
			return fmt.Errorf("log record %#x has no entry type", z)
		}
		rec.entries = append(rec.entries, gpaxos.Entry{Zxid: gpaxos.Zxid(z), Type: gpaxos.EntryType(payload[0]),
			Data: bytes.Clone(payload[1:])})
		return nil
	})
	if snapErr != nil {
		rec.entries = nil
		return rec, hsFound, snapErr
	}
	if errors.Is(err, wal.ErrPurged) {
		// No readable snapshot reaches the start of the log: the newest
		// ones are damaged and the older ones purged with the log they
		// needed.
		rec.entries = nil
		return rec, hsFound, &damagedError{fmt.Sprintf("no readable snapshot reaches the start of the log (%v)", err)}
	}
	if errors.As(err, &corrupt) {
		rec.entries, rec.snap = nil, nil
		return rec, hsFound, &damagedError{fmt.Sprintf("the log is corrupt (%v)", corrupt)}
	}
	if err != nil {
		lg.Close()
		return rec, false, fmt.Errorf("replaying log: %w", err)
	}
	return rec, hsFound, hsErr
}

// setAside moves the log, the snapshots and the hard state into a lost-*
// directory, which nothing reads again, and logs why.
func (s *storage) setAside(why string) error {
	if s.log != nil {
		if err := s.log.Close(); err != nil {
			return err
		}
		s.log = nil
	}
	aside := filepath.Join(s.dir, "lost-"+time.Now().UTC().Format("20060102T150405.000000000"))
	if err := os.Mkdir(aside, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"log", "snapshots", "hardstate", "resync"} {
		err := os.Rename(filepath.Join(s.dir, name), filepath.Join(aside, name))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	for _, d := range []string{s.snapDir(), s.logDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := fsutil.SyncDir(s.dir); err != nil {
		return err
	}
	s.logger.Error("replica: durable state is not what this server may have promised; set aside, starting empty as a new incarnation that votes only once the ensemble registers it",
		"why", why, "set_aside", aside)
	return nil
}

// takeCleanMarker reports whether the replica stopped cleanly last time,
// and removes the marker durably before anything else is written, so that
// a crash from now on does not look clean.
func (s *storage) takeCleanMarker() (bool, error) {
	err := os.Remove(s.cleanPath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, fsutil.SyncDir(s.dir)
}

// persist makes rd's state durable: snapshot, truncation, entries, then
// the hard state, with one fsync of the log. Messages in rd may leave once
// it returns nil.
func (s *storage) persist(rd *gpaxos.Ready) error {
	if rd.Snapshot != nil {
		sn := rd.Snapshot
		s.snapMu.Lock()
		_, err := snap.Save(s.snapDir(), int64(sn.Index), func(w io.Writer) error {
			return writeSnapshot(w, sn.Voters, sn.Data)
		}, snap.WithLogger(s.logger))
		s.snapMu.Unlock()
		if err != nil {
			return fmt.Errorf("saving snapshot: %w", err)
		}
		// Entries after the snapshot come from the sender's history; what
		// this log held beyond the snapshot may belong to another one.
		if s.log.LastZxid() > int64(sn.Index) {
			if err := s.log.TruncateAfter(int64(sn.Index)); err != nil {
				return err
			}
		}
		s.base = sn.Index
	}
	if rd.TruncateAfter != nil {
		if err := s.log.TruncateAfter(int64(*rd.TruncateAfter)); err != nil {
			return err
		}
	}
	var buf []byte
	for _, e := range rd.Entries {
		buf = append(append(buf[:0], byte(e.Type)), e.Data...)
		if err := s.log.Append(int64(e.Zxid), buf); err != nil {
			return err
		}
	}
	hs := s.saved
	if rd.HardState != nil {
		hs = *rd.HardState
	}
	writeHS := rd.WritesHardState(s.saved)
	if len(rd.Entries) > 0 && !writeHS && rd.TruncateAfter == nil && s.mayskipSync(rd.Entries) {
		// Written, not durable: a process crash loses nothing, a machine
		// crash can (Config.SkipSync).
		if err := s.log.Flush(); err != nil {
			return err
		}
	} else if len(rd.Entries) > 0 {
		start := time.Now()
		if d := s.stall.take(); d > 0 {
			time.Sleep(d)
		}
		if err := s.log.Sync(); err != nil {
			return err
		}
		if s.onSync != nil {
			s.onSync(len(rd.Entries), time.Since(start))
		}
	}
	if writeHS {
		if err := s.writeHardState(hs); err != nil {
			return err
		}
	}
	return nil
}

// mayskipSync reports whether ents are all proposals skipSync lets go
// without an fsync.
func (s *storage) mayskipSync(ents []gpaxos.Entry) bool {
	if s.skipSync == nil {
		return false
	}
	for _, e := range ents {
		if e.Type != gpaxos.EntryNormal {
			return false
		}
		_, body, err := parseHeader(e.Data)
		if err != nil || !s.skipSync(body) {
			return false
		}
	}
	return true
}

// saveSnapshot stores a snapshot the application made at index and drops
// the log before it (keeping a margin is the purge's job: entries up to
// index are in the snapshot). The purge, which deletes gradually, runs
// outside snapMu: a snapshot received meanwhile is not kept waiting.
func (s *storage) saveSnapshot(index gpaxos.Zxid, voters quorum.Config, data []byte, retain int) error {
	s.snapMu.Lock()
	_, err := snap.Save(s.snapDir(), int64(index), func(w io.Writer) error {
		return writeSnapshot(w, voters, data)
	}, snap.WithLogger(s.logger))
	s.snapMu.Unlock()
	if err != nil {
		return err
	}
	return snap.Purge(s.snapDir(), filepath.Join(s.dir, "log"), retain, snap.WithLogger(s.logger))
}

// close closes the log and marks the stop clean: the next open then knows
// that every record in the log was complete, so a damaged one was damaged
// at rest.
func (s *storage) close() error {
	if err := s.log.Close(); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(s.cleanPath(), nil, s.noSync)
}

// clearRecovering rewrites the identity without the recovering mark: the
// configuration now registers this incarnation, so a restart needs no mark
// to know it votes.
func (s *storage) clearRecovering() error {
	id := s.id
	id.Recovering = false
	if err := writeIdentity(s.idPath(), id); err != nil {
		return err
	}
	s.id = id
	return nil
}

// writeHardState makes hs and the log's base durable.
func (s *storage) writeHardState(hs gpaxos.HardState) error {
	if err := fsutil.WriteFileAtomic(s.hsPath(), encodeHardState(hs, s.base), s.noSync); err != nil {
		return err
	}
	s.saved = hs
	return nil
}

// The hardstate file: magic, the fields, the log's base (hsMagic only),
// CRC-32C of everything before it. Files with hsMagicV1 have no base.
const (
	hsMagic   = "GHS2"
	hsMagicV1 = "GHS1"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeHardState(hs gpaxos.HardState, base gpaxos.Zxid) []byte {
	b := []byte(hsMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(hs.Promised))
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Leader))
	b = binary.BigEndian.AppendUint32(b, uint32(hs.Current))
	b = binary.BigEndian.AppendUint64(b, hs.GroupEpoch)
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Coordinator))
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Commit))
	b = binary.BigEndian.AppendUint64(b, uint64(base))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

const (
	hsLenV1 = 4 + 4 + 8 + 4 + 8 + 8 + 8 + 4
	hsLen   = hsLenV1 + 8
)

func decodeHardState(b []byte) (gpaxos.HardState, gpaxos.Zxid, error) {
	n := len(b)
	if !(n == hsLen && string(b[:4]) == hsMagic || n == hsLenV1 && string(b[:4]) == hsMagicV1) {
		return gpaxos.HardState{}, 0, errors.New("not a hardstate file")
	}
	if crc32.Checksum(b[:n-4], castagnoli) != binary.BigEndian.Uint32(b[n-4:]) {
		return gpaxos.HardState{}, 0, errors.New("checksum mismatch")
	}
	hs := gpaxos.HardState{
		Promised:    gpaxos.Epoch(binary.BigEndian.Uint32(b[4:])),
		Leader:      gpaxos.ID(binary.BigEndian.Uint64(b[8:])),
		Current:     gpaxos.Epoch(binary.BigEndian.Uint32(b[16:])),
		GroupEpoch:  binary.BigEndian.Uint64(b[20:]),
		Coordinator: gpaxos.ID(binary.BigEndian.Uint64(b[28:])),
		Commit:      gpaxos.Zxid(binary.BigEndian.Uint64(b[36:])),
	}
	var base gpaxos.Zxid
	if n == hsLen {
		base = gpaxos.Zxid(binary.BigEndian.Uint64(b[44:]))
	}
	return hs, base, nil
}

// readHardState reads path; found is false when there is none. A damaged
// file is a *damagedError: a file written atomically is never torn, so its
// promises are lost, not half-written.
func readHardState(path string) (hs gpaxos.HardState, base gpaxos.Zxid, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return gpaxos.HardState{}, 0, false, nil
	}
	if err != nil {
		return gpaxos.HardState{}, 0, false, err
	}
	hs, base, err = decodeHardState(b)
	if err != nil {
		return gpaxos.HardState{}, 0, false, &damagedError{fmt.Sprintf("the hard state is damaged (%s: %v)", path, err)}
	}
	return hs, base, true, nil
}

// damagedError is a durable file that exists but cannot be read.
type damagedError struct{ what string }

func (e *damagedError) Error() string { return e.what }

// A snapshot file holds the configuration in effect at its index, then the
// application's data: snapVotersMagic, a uvarint length, the encoded
// configuration (gpaxos.EncodeConfig). Files without the magic were written
// before configurations changed at runtime and hold the data alone.
const snapVotersMagic = "GSV1"

func writeSnapshot(w io.Writer, voters quorum.Config, data []byte) error {
	cb := gpaxos.EncodeConfig(voters)
	hdr := binary.AppendUvarint([]byte(snapVotersMagic), uint64(len(cb)))
	for _, b := range [][]byte{hdr, cb, data} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// splitSnapshot separates a snapshot file's configuration (empty for old
// files) from its data.
func splitSnapshot(b []byte) (quorum.Config, []byte, error) {
	if !bytes.HasPrefix(b, []byte(snapVotersMagic)) {
		return quorum.Config{}, b, nil
	}
	rest := b[len(snapVotersMagic):]
	n, k := binary.Uvarint(rest)
	if k <= 0 || n > uint64(len(rest)-k) {
		return quorum.Config{}, nil, errors.New("snapshot: malformed configuration header")
	}
	v, err := gpaxos.DecodeConfig(rest[k : k+int(n)])
	if err != nil {
		return quorum.Config{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	return v, rest[k+int(n):], nil
}
