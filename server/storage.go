package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// recoverState rebuilds the tree from the newest valid snapshot and the log
// after it, and opens the log for appending. Whatever the log holds was
// fsynced before it was acknowledged, so the result is exactly the
// acknowledged state (plus, possibly, writes that were logged but whose
// acknowledgement the crash prevented, which a client must treat as unknown).
//
// With namespaces declared, the log's records carry the namespaces they
// change, and a record found damaged at rest quarantines those namespaces
// instead of stopping the server (quarantine.go): the returned quarantine
// is then not empty, and it is on disk before recoverState returns.
//
// written counts the bytes the log appends from then on (the metric
// giraffe_log_bytes_written_total).
func recoverState(cfg *Config, logger *slog.Logger, written *atomic.Uint64) (*datatree.Tree, *wal.Log, *quarantine, error) {
	for _, dir := range []string{cfg.SnapDir(), cfg.LogDir()} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, nil, err
		}
	}
	tree := datatree.New()
	zxid, found, err := snap.LoadNewest(cfg.SnapDir(), func(z int64, r io.Reader) error {
		t, err := datatree.ReadSnapshot(r)
		if err != nil {
			return err
		}
		if t.LastZxid() != z {
			return fmt.Errorf("snapshot 0x%x holds a tree at zxid 0x%x", z, t.LastZxid())
		}
		tree = t
		return nil
	})
	noSnapshot := errors.Is(err, snap.ErrNoValidSnapshot)
	if noSnapshot {
		// Every snapshot is damaged. A log that begins with the first
		// write holds the whole history; the replay below finds out
		// (a log begun after a restored snapshot, or purged, does not).
		logger.Warn("no snapshot is readable: rebuilding the tree from the whole log", "err", err)
		tree, err = datatree.New(), nil
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("loading snapshot: %w", err)
	}
	if found {
		logger.Info("loaded snapshot", "zxid", fmt.Sprintf("0x%x", zxid), "nodes", tree.NodeCount())
	}
	tagged := cfg.Namespaces.Len() > 0
	lg, err := wal.Open(cfg.LogDir(), wal.Options{Logger: logger, NoSync: !cfg.ForceSync, Tagged: tagged, KeepDamaged: tagged, Written: written})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("opening log: %w", err)
	}
	var q *quarantine
	if tagged {
		if q, err = quarantineDamage(cfg, lg, tree.LastZxid()); err != nil {
			lg.Close()
			return nil, nil, nil, err
		}
		tree.SetGate(q.admit)
	}
	replayed, err := replayLog(tree, lg, q)
	if noSnapshot && errors.Is(err, wal.ErrPurged) && tagged {
		// The log cannot rebuild the tree. The newest snapshot may still
		// hold every namespace but those its damage is in.
		var damaged bool
		tree, q, replayed, damaged, err = recoverDamagedSections(cfg, lg, logger)
		if !damaged {
			err = wal.ErrPurged
		}
	}
	if noSnapshot && errors.Is(err, wal.ErrPurged) {
		lg.Close()
		return nil, nil, nil, fmt.Errorf("every snapshot in %s is damaged and the log does not begin with the first write: %w",
			cfg.SnapDir(), err)
	}
	if err != nil {
		lg.Close()
		return nil, nil, nil, fmt.Errorf("replaying log: %w", err)
	}
	if lg.LastZxid() > tree.LastZxid() {
		lg.Close()
		return nil, nil, nil, fmt.Errorf("log ends at 0x%x but replay reached only 0x%x", lg.LastZxid(), tree.LastZxid())
	}
	if !q.empty() {
		if err := q.save(cfg.DataDir); err != nil {
			lg.Close()
			return nil, nil, nil, fmt.Errorf("recording the quarantine: %w", err)
		}
		for _, r := range q.list() {
			logger.Error("namespace quarantined: its data on this server is damaged; requests under it get DATAINCONSISTENCY, the other namespaces are served",
				"namespace", "/"+r.Name, "since", fmt.Sprintf("0x%x", r.Since), "reason", r.Reason)
		}
	}
	logger.Info("recovered", "zxid", fmt.Sprintf("0x%x", tree.LastZxid()), "replayed", replayed,
		"nodes", tree.NodeCount(), "sessions", len(tree.Sessions()))
	tree.SetSnapshotSections(sectionNames(cfg.Namespaces))
	return tree, lg, q, nil
}

// replayLog applies to tree every record of lg after the tree's zxid,
// through q's gate when q is not nil, and returns how many it applied.
func replayLog(tree *datatree.Tree, lg *wal.Log, q *quarantine) (int, error) {
	replayed := 0
	err := lg.ReplayRecords(tree.LastZxid(), func(r wal.Record) error {
		if r.Damaged {
			// Its namespaces are quarantined from it on; the others
			// never depended on it.
			tree.Apply(&txn.Entry{Zxid: r.Zxid, Op: txn.Op{Kind: txn.KindNoop}})
			return nil
		}
		e, err := txn.Unmarshal(r.Payload)
		if err != nil {
			return fmt.Errorf("log entry 0x%x: %w", r.Zxid, err)
		}
		if e.Zxid != r.Zxid {
			return fmt.Errorf("log record 0x%x holds entry 0x%x", r.Zxid, e.Zxid)
		}
		tree.Apply(e)
		replayed++
		return nil
	})
	if err == nil {
		err = q.err()
	}
	return replayed, err
}

// recoverDamagedSections loads the newest snapshot whose checksum fails
// but whose damage lies inside namespaces' sections (snapshot format
// version 2, datatree.ReadSnapshotSections): those namespaces are
// quarantined from the snapshot on, everything else is loaded, and the
// log after the snapshot is replayed through the quarantine. damaged is
// false when there is no such snapshot.
func recoverDamagedSections(cfg *Config, lg *wal.Log, logger *slog.Logger) (tree *datatree.Tree, q *quarantine, replayed int, damaged bool, err error) {
	var lost []string
	zxid, found, err := snap.ReadNewestDamaged(cfg.SnapDir(), func(z int64, r io.Reader) error {
		t, names, err := datatree.ReadSnapshotSections(r)
		if err != nil {
			return err
		}
		if t.LastZxid() != z {
			return fmt.Errorf("snapshot 0x%x holds a tree at zxid 0x%x", z, t.LastZxid())
		}
		tree, lost = t, names
		return nil
	})
	if err != nil || !found || len(lost) == 0 {
		if err != nil {
			logger.Warn("the newest snapshot's damage is not inside namespaces alone", "err", err)
		}
		return nil, nil, 0, false, nil
	}
	if q, err = quarantineDamage(cfg, lg, zxid); err != nil {
		return nil, nil, 0, true, err
	}
	for _, name := range lost {
		if _, ok := cfg.Namespaces.Lookup(name); !ok {
			return nil, nil, 0, true, fmt.Errorf("the newest snapshot's section /%s is damaged and /%s is not a declared namespace", name, name)
		}
		q.add(quarantined{Name: name, Since: zxid + 1,
			Reason: fmt.Sprintf("its section of snapshot %#x fails its checksum, and no other copy of it is readable", zxid)})
	}
	logger.Warn("loaded the newest snapshot without its damaged namespaces", "zxid", fmt.Sprintf("0x%x", zxid), "damaged", lost)
	tree.SetGate(q.admit)
	replayed, err = replayLog(tree, lg, q)
	return tree, q, replayed, true, err
}

// quarantineDamage gathers the quarantine of a log with namespaces: the
// one recorded by earlier starts, and the namespaces of every record
// after the snapshot (at zxid from) that the log found damaged, kept in
// place or cut off its end. A damaged record at or before the snapshot
// is harmless: the snapshot holds its effect.
func quarantineDamage(cfg *Config, lg *wal.Log, from int64) (*quarantine, error) {
	q, err := loadQuarantine(cfg.DataDir, cfg.Namespaces)
	if err != nil {
		return nil, fmt.Errorf("reading the quarantine: %w", err)
	}
	for _, r := range lg.Damaged() {
		if r.Zxid <= from {
			continue
		}
		what := fmt.Sprintf("log record %#x (%s, offset %d) fails its checksum", r.Zxid, r.Segment, r.Offset)
		if err := q.attribute(r.Zxid, r.Mask, what); err != nil {
			return nil, err
		}
	}
	if cut := lg.Cut(); cut.Damaged && cut.Zxid > from {
		what := fmt.Sprintf("the log's last record %#x was damaged at rest (%s)", cut.Zxid, cut.Reason)
		if err := q.attribute(cut.Zxid, cut.Mask, what); err != nil {
			return nil, err
		}
	} else if cut.Damaged && cut.Zxid == 0 {
		return nil, fmt.Errorf("the log's last record after %#x was damaged at rest and its header cannot be read (%s): the namespaces it changed are unknown",
			cut.AfterZxid, cut.Reason)
	}
	return q, nil
}

// snapshotter writes snapshots in the background. The applier fixes the
// tree's state at one zxid while it holds the tree lock (a
// datatree.SnapshotWriter: exactly that state, not fuzzy, in time
// independent of the tree's size); serializing it, a chunk of nodes per
// hold of the read lock, and writing, fsyncing and purging files happen
// outside, so no reader or writer waits for the whole tree.
type snapshotter struct {
	s       *Server
	mu      sync.Mutex
	running bool
	wg      sync.WaitGroup
}

func newSnapshotter(s *Server) *snapshotter { return &snapshotter{s: s} }

// idle reports whether no snapshot is being written.
func (sn *snapshotter) idle() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return !sn.running
}

// writeSnapshot writes w's snapshot to out beside the applier (a chunk at
// a time under the tree's read lock), then ends it.
func (s *Server) writeSnapshot(w *datatree.SnapshotWriter, out io.Writer) error {
	err := w.WriteTo(out, s.treeMu.RLocker())
	s.endSnapshot(w)
	return err
}

// endSnapshot ends w, letting the tree change without keeping anything for
// it; again is harmless.
func (s *Server) endSnapshot(w *datatree.SnapshotWriter) {
	s.treeMu.Lock()
	w.Close()
	s.treeMu.Unlock()
}

// take begins a snapshot of the tree now and writes it in the background;
// false when another snapshot of the tree (a backup's) is being written,
// to be tried again later. The caller holds the tree lock.
func (sn *snapshotter) take() bool {
	tree := sn.s.tree
	w, err := tree.BeginSnapshot()
	if err != nil {
		return false
	}
	zxid := tree.LastZxid()
	sn.mu.Lock()
	sn.running = true
	sn.mu.Unlock()
	sn.wg.Add(1)
	go func() {
		defer sn.wg.Done()
		defer func() { sn.mu.Lock(); sn.running = false; sn.mu.Unlock() }()
		start := time.Now()
		// Streamed to the file: a snapshot held whole in memory doubles
		// the heap of a big tree, and the collector's work with it.
		path, err := snap.Save(sn.s.cfg.SnapDir(), zxid, func(out io.Writer) error {
			return sn.s.writeSnapshot(w, out)
		})
		if err != nil {
			sn.s.endSnapshot(w) // Save may fail before it writes
			sn.s.log.Error("writing snapshot", "zxid", fmt.Sprintf("0x%x", zxid), "err", err)
			return
		}
		sn.s.log.Info("snapshot written", "path", path, "took", time.Since(start))
		sn.s.metrics.snapshots.Inc()
		sn.purge()
	}()
	return true
}

// purge deletes snapshots and logs beyond the retention count.
func (sn *snapshotter) purge() {
	if err := snap.Purge(sn.s.cfg.SnapDir(), sn.s.cfg.LogDir(), sn.s.cfg.SnapRetainCount, snap.WithLogger(sn.s.log)); err != nil {
		sn.s.log.Warn("purging old snapshots and logs", "err", err)
	}
}

// wait blocks until a snapshot being written is done.
func (sn *snapshotter) wait() { sn.wg.Wait() }
