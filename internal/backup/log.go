package backup

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// Log is a transaction log to read offline: its directory, and whose it
// is, which says what its records hold.
type Log struct {
	Dir string
	// Member: the log of an ensemble member (package replica), whose
	// records are Group Paxos entries (a type byte, then the entry's
	// data); otherwise a standalone server's, whose records are
	// txn.Entry encodings.
	Member bool
}

// DumpLog writes every record of the log to w, one line each: its zxid,
// where it is (segment:offset), its namespace mask when its segment stores
// one (format version 2), and what it is. A standalone server's
// record shows the entry's kind, session, time and path (a multi's ops'
// paths); a member's shows the Group Paxos entry type and its size (its
// data is the server's proposal, not decoded here). At the first damaged
// record it stops with the error, after the records before it.
func DumpLog(l Log, w io.Writer) error {
	bw := bufio.NewWriter(w)
	err := wal.Records(l.Dir, func(r wal.Record) error {
		desc, err := describe(l, r)
		if err != nil {
			return err
		}
		mask := ""
		if r.Tagged {
			mask = fmt.Sprintf(" mask=0x%x", r.Mask)
		}
		fmt.Fprintf(bw, "0x%x %s:%d%s %s\n", r.Zxid, filepath.Base(r.Segment), r.Offset, mask, desc)
		return nil
	})
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// describe says what a record holds, or why it does not decode.
func describe(l Log, r wal.Record) (string, error) {
	if l.Member {
		if len(r.Payload) < 1 {
			return "", fmt.Errorf("record 0x%x at %s:%d has no entry type", r.Zxid, r.Segment, r.Offset)
		}
		z := gpaxos.Zxid(r.Zxid)
		return fmt.Sprintf("epoch=%d counter=%d type=%s bytes=%d", z.Epoch(), z.Counter(),
			entryTypeName(gpaxos.EntryType(r.Payload[0])), len(r.Payload)-1), nil
	}
	e, err := txn.Unmarshal(r.Payload)
	if err != nil {
		return "", fmt.Errorf("record 0x%x at %s:%d: %w", r.Zxid, r.Segment, r.Offset, err)
	}
	if e.Zxid != r.Zxid {
		return "", fmt.Errorf("record 0x%x at %s:%d holds entry 0x%x", r.Zxid, r.Segment, r.Offset, e.Zxid)
	}
	var paths []string
	if e.Op.Kind == txn.KindMulti {
		for _, o := range e.Op.Ops {
			paths = append(paths, o.Kind.String()+":"+o.Path)
		}
	} else if e.Op.Path != "" {
		paths = append(paths, e.Op.Path)
	}
	s := fmt.Sprintf("%s session=0x%x time=%s", e.Op.Kind, uint64(e.Session),
		time.UnixMilli(e.Time).UTC().Format("2006-01-02T15:04:05.000Z"))
	if len(paths) > 0 {
		s += " path=" + strings.Join(paths, ",")
	}
	return s, nil
}

func entryTypeName(t gpaxos.EntryType) string {
	switch t {
	case gpaxos.EntryNormal:
		return "normal"
	case gpaxos.EntryNoop:
		return "noop"
	case gpaxos.EntryConfChange:
		return "confchange"
	}
	return fmt.Sprintf("type(%d)", t)
}

// VerifyLog checks the log as a server's start would, without changing
// it: every record's checksums, zxid order and the chain of segments
// (wal.Check), and that every record decodes as what it should hold. It
// returns a *wal.CorruptError at the first damage a server would refuse
// to start on; the report's Tail describes a torn tail the server would
// cut (Tail.Damaged: a whole record damaged at rest, which may have been
// acknowledged).
func VerifyLog(l Log) (wal.Report, error) {
	rep, err := wal.Check(l.Dir)
	if err != nil {
		return rep, err
	}
	// wal.Check passed, so Records meets no damage before the torn tail,
	// if any, which is reported, not an error.
	err = wal.Records(l.Dir, func(r wal.Record) error {
		_, err := describe(l, r)
		return err
	})
	if ce := (*wal.CorruptError)(nil); errors.As(err, &ce) && rep.Tail.Bytes > 0 {
		err = nil
	}
	return rep, err
}
