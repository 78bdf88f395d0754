package corrupt

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/server"
)

// snapshotSpan chooses, in the newest valid snapshot, the znode of the
// namespace written last (the highest mzxid; among equals, the last in
// the snapshot's order) and the span to damage: its data when it has at
// least o.Bytes of them, its whole record otherwise. The snapshot's body
// is read into memory: this is a tool for test-sized data.
func snapshotSpan(l layout, o Options, in func(path string) bool) (span, error) {
	path, _, found, err := snap.Newest(l.snapDir)
	if err != nil {
		return span{}, err
	}
	if !found {
		return span{}, fmt.Errorf("no snapshot file in %s", l.snapDir)
	}
	var body []byte
	info, err := snap.ReadFile(path, func(_ int64, r io.Reader) (err error) {
		body, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		return span{}, err
	}
	tree := body
	if l.member {
		if tree, err = replica.SnapshotData(body); err == nil {
			tree, err = server.SnapshotTree(tree)
		}
		if err != nil {
			return span{}, fmt.Errorf("%s: %w", path, err)
		}
	}
	base := info.BodyOffset + int64(len(body)-len(tree))
	var best *datatree.NodeSpan
	if err := datatree.SnapshotNodeSpans(bytes.NewReader(tree), func(n datatree.NodeSpan) error {
		if in(n.Path) && (best == nil || n.Mzxid >= best.Mzxid) {
			best = &n
		}
		return nil
	}); err != nil {
		return span{}, fmt.Errorf("%s: %w", path, err)
	}
	if best == nil {
		return span{}, fmt.Errorf("no znode of namespace %s (/%s) in %s", o.Namespace, o.Namespace, path)
	}
	s := span{file: path, off: base + best.RecordOff, len: best.RecordLen,
		report: Report{Region: "record", Znode: best.Path, Mzxid: fmt.Sprintf("0x%x", best.Mzxid)}}
	if best.DataLen >= int64(o.Bytes) {
		s.off, s.len, s.report.Region = base+best.DataOff, best.DataLen, "data"
	}
	return s, nil
}

// logSpan chooses the newest log record whose transaction writes under
// the namespace (any op's path, for a multi) and, to damage, the
// transaction's bytes in its payload: the record's header stays intact,
// so its header checksum holds and its payload checksum fails. Records
// after damage already in the log are not reached.
func logSpan(l layout, o Options, in func(path string) bool) (span, error) {
	var s span
	found := false
	err := wal.Records(l.logDir, func(r wal.Record) error {
		entry := r.Payload
		if l.member {
			body, ok := replica.ProposalBody(r.Payload)
			if !ok {
				return nil
			}
			if entry, ok = server.ProposalEntry(body); !ok {
				return nil
			}
		}
		e, err := txn.Unmarshal(entry)
		if err != nil {
			return nil // not a transaction this tool can attribute
		}
		paths := writtenPaths(e, in)
		if len(paths) == 0 {
			return nil
		}
		found = true
		s = span{file: r.Segment, off: r.PayloadOffset + int64(len(r.Payload)-len(entry)), len: int64(len(entry)),
			report: Report{Region: "payload", Zxid: fmt.Sprintf("0x%x", r.Zxid), Paths: paths}}
		return nil
	})
	var ce *wal.CorruptError
	if errors.As(err, &ce) && found {
		s.report.Note = fmt.Sprintf("the log is already damaged at %s offset %d; records after it were not considered", ce.File, ce.Offset)
		err = nil
	}
	if err != nil {
		return span{}, err
	}
	if !found {
		return span{}, fmt.Errorf("no log record touches /%s in %s", o.Namespace, l.logDir)
	}
	return s, nil
}

// writtenPaths returns the paths of e's ops that in holds.
func writtenPaths(e *txn.Entry, in func(path string) bool) []string {
	ops := []txn.Op{e.Op}
	if e.Op.Kind == txn.KindMulti {
		ops = e.Op.Ops
	}
	var paths []string
	for _, op := range ops {
		if op.Path != "" && in(op.Path) {
			paths = append(paths, op.Path)
		}
	}
	return paths
}
