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
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// storage is the durable state of one replica in its data directory:
//
//	log/        the accepted entries (package wal; record zxid = entry zxid,
//	            payload = entry type byte + data)
//	snapshots/  application snapshots (package snap; named by their index)
//	hardstate   the node's HardState, replaced atomically
type storage struct {
	dir    string
	log    *wal.Log
	noSync bool
	logger *slog.Logger
	saved  gpaxos.HardState
	// onSync, if set, hears of every fsync of the log (Config.OnSync).
	onSync func(entries int, took time.Duration)
}

// recovered is what storage held at open.
type recovered struct {
	hs      gpaxos.HardState
	snap    *gpaxos.Snapshot
	entries []gpaxos.Entry
}

func (s *storage) snapDir() string { return filepath.Join(s.dir, "snapshots") }
func (s *storage) hsPath() string  { return filepath.Join(s.dir, "hardstate") }

// openStorage opens (creating when new) the storage in dir and reads what it
// holds. voters is the configuration recorded with snapshots (the ensemble's
// static configuration).
func openStorage(dir string, noSync bool, logger *slog.Logger, voters quorum.Config) (*storage, recovered, error) {
	s := &storage{dir: dir, noSync: noSync, logger: logger}
	var rec recovered
	for _, d := range []string{dir, s.snapDir(), filepath.Join(dir, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, rec, err
		}
	}
	hs, err := readHardState(s.hsPath())
	if err != nil {
		return nil, rec, err
	}
	rec.hs, s.saved = hs, hs
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
	}, snap.WithLogger(logger))
	if err != nil {
		return nil, rec, fmt.Errorf("loading snapshot: %w", err)
	}
	lg, err := wal.Open(filepath.Join(dir, "log"), wal.Options{Logger: logger, NoSync: noSync})
	if err != nil {
		return nil, rec, fmt.Errorf("opening log: %w", err)
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
	if err != nil {
		lg.Close()
		return nil, rec, fmt.Errorf("replaying log: %w", err)
	}
	return s, rec, nil
}

// persist makes rd's state durable: snapshot, truncation, entries, then
// the hard state, with one fsync of the log. Messages in rd may leave once
// it returns nil.
func (s *storage) persist(rd *gpaxos.Ready) error {
	if rd.Snapshot != nil {
		sn := rd.Snapshot
		if _, err := snap.Save(s.snapDir(), int64(sn.Index), func(w io.Writer) error {
			return writeSnapshot(w, sn.Voters, sn.Data)
		}, snap.WithLogger(s.logger)); err != nil {
			return fmt.Errorf("saving snapshot: %w", err)
		}
		// Entries after the snapshot come from the sender's history; what
		// this log held beyond the snapshot may belong to another one.
		if s.log.LastZxid() > int64(sn.Index) {
			if err := s.log.TruncateAfter(int64(sn.Index)); err != nil {
				return err
			}
		}
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
	if len(rd.Entries) > 0 {
		start := time.Now()
		if err := s.log.Sync(); err != nil {
			return err
		}
		if s.onSync != nil {
			s.onSync(len(rd.Entries), time.Since(start))
		}
	}
	if rd.HardState != nil && !sameVotes(*rd.HardState, s.saved) {
		if err := writeHardState(s.hsPath(), *rd.HardState, s.noSync); err != nil {
			return err
		}
		s.saved = *rd.HardState
	}
	return nil
}

// sameVotes reports whether a and b differ at most in Commit. Commit is a
// hint the node re-learns from its coordinator, so a change of it alone is
// not worth an fsync on every commit; it is written with the next change
// that matters.
func sameVotes(a, b gpaxos.HardState) bool {
	a.Commit = b.Commit
	return a == b
}

// saveSnapshot stores a snapshot the application made at index and drops
// the log before it (keeping a margin is the purge's job: entries up to
// index are in the snapshot).
func (s *storage) saveSnapshot(index gpaxos.Zxid, voters quorum.Config, data []byte, retain int) error {
	if _, err := snap.Save(s.snapDir(), int64(index), func(w io.Writer) error {
		return writeSnapshot(w, voters, data)
	}, snap.WithLogger(s.logger)); err != nil {
		return err
	}
	return snap.Purge(s.snapDir(), filepath.Join(s.dir, "log"), retain, snap.WithLogger(s.logger))
}

func (s *storage) close() error { return s.log.Close() }

// The hardstate file: magic, version, the fields, CRC-32C of everything
// before it.
const hsMagic = "GHS1"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeHardState(hs gpaxos.HardState) []byte {
	b := []byte(hsMagic)
	b = binary.BigEndian.AppendUint32(b, uint32(hs.Promised))
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Leader))
	b = binary.BigEndian.AppendUint32(b, uint32(hs.Current))
	b = binary.BigEndian.AppendUint64(b, hs.GroupEpoch)
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Coordinator))
	b = binary.BigEndian.AppendUint64(b, uint64(hs.Commit))
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

const hsLen = 4 + 4 + 8 + 4 + 8 + 8 + 8 + 4

func decodeHardState(b []byte) (gpaxos.HardState, error) {
	if len(b) != hsLen || string(b[:4]) != hsMagic {
		return gpaxos.HardState{}, errors.New("not a hardstate file")
	}
	if crc32.Checksum(b[:hsLen-4], castagnoli) != binary.BigEndian.Uint32(b[hsLen-4:]) {
		return gpaxos.HardState{}, errors.New("checksum mismatch")
	}
	return gpaxos.HardState{
		Promised:    gpaxos.Epoch(binary.BigEndian.Uint32(b[4:])),
		Leader:      gpaxos.ID(binary.BigEndian.Uint64(b[8:])),
		Current:     gpaxos.Epoch(binary.BigEndian.Uint32(b[16:])),
		GroupEpoch:  binary.BigEndian.Uint64(b[20:]),
		Coordinator: gpaxos.ID(binary.BigEndian.Uint64(b[28:])),
		Commit:      gpaxos.Zxid(binary.BigEndian.Uint64(b[36:])),
	}, nil
}

// readHardState reads path; a missing file is a fresh server. A damaged
// file is an error: a promise this acceptor made must never be forgotten.
func readHardState(path string) (gpaxos.HardState, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return gpaxos.HardState{}, nil
	}
	if err != nil {
		return gpaxos.HardState{}, err
	}
	hs, err := decodeHardState(b)
	if err != nil {
		return gpaxos.HardState{}, fmt.Errorf("%s: %w", path, err)
	}
	return hs, nil
}

// writeHardState replaces path atomically: a temporary file, fsynced, then
// renamed over it, then the directory fsynced.
func writeHardState(path string, hs gpaxos.HardState, noSync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(encodeHardState(hs)); err != nil {
		f.Close()
		return err
	}
	if !noSync {
		if err := f.Sync(); err != nil {
			f.Close()
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if noSync {
		return nil
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

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
