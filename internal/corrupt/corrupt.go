// Package corrupt is a fault-injection tool for tests and demonstrations:
// it damages, on purpose, the newest data one namespace has in a stopped
// server's data directory, so that what a damaged byte in one namespace
// does to the others can be watched.
//
// It flips bytes inside one znode's record in the newest valid snapshot, or
// inside the payload of the newest log record whose transaction writes
// under the namespace. It never touches a file's framing: the snapshot's
// header and trailer and the log record's header stay intact, so the
// damage is found by the checksum that covers those bytes and is
// attributed to that snapshot or that record. Nothing here repairs or
// undoes what it did.
package corrupt

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// Target is what to damage.
type Target string

// The targets.
const (
	// Snapshot damages a znode of the namespace in the newest valid
	// snapshot.
	Snapshot Target = "snapshot"
	// Log damages the newest log record that writes under the namespace.
	Log Target = "log"
)

// DefaultBytes is how many bytes are flipped when Options.Bytes is zero.
const DefaultBytes = 16

// Options says what to damage.
type Options struct {
	// DataDir is a server's data directory (a standalone server's or an
	// ensemble member's) or a member's replica directory itself.
	DataDir string
	// Namespace is the namespace's name: its root is /Namespace.
	Namespace string
	Target    Target
	// Bytes is how many bytes to flip (DefaultBytes when zero); fewer when
	// the chosen span is shorter.
	Bytes int
	// Seed chooses the bytes and what they are XORed with: the same seed
	// on the same files damages the same bytes the same way.
	Seed uint64
}

// Report says what was damaged.
type Report struct {
	Target Target `json:"target"`
	// Layout is "standalone" or "member"; Note says why, when the data
	// directory could have been either.
	Layout string `json:"layout"`
	Note   string `json:"note,omitempty"`
	// File is the damaged file and Offsets the offsets of the flipped
	// bytes in it, ascending.
	File    string  `json:"file"`
	Offsets []int64 `json:"offsets"`
	// Region is what the bytes were inside: a znode's "data" or its
	// whole "record" (snapshot), or a record's "payload" (log).
	Region string `json:"region"`
	// Znode and Mzxid name the damaged znode (snapshot).
	Znode string `json:"znode,omitempty"`
	Mzxid string `json:"mzxid,omitempty"`
	// Zxid and Paths name the damaged record and the paths its
	// transaction writes (log).
	Zxid  string   `json:"zxid,omitempty"`
	Paths []string `json:"paths,omitempty"`
	Seed  uint64   `json:"seed"`
}

// String is the report on one line.
func (r Report) String() string {
	offs := make([]string, len(r.Offsets))
	for i, o := range r.Offsets {
		offs[i] = fmt.Sprint(o)
	}
	s := fmt.Sprintf("corrupted target=%s layout=%s file=%s offsets=%s region=%s", r.Target, r.Layout, r.File, strings.Join(offs, ","), r.Region)
	if r.Target == Snapshot {
		s += fmt.Sprintf(" znode=%s mzxid=%s", r.Znode, r.Mzxid)
	} else {
		s += fmt.Sprintf(" zxid=%s paths=%s", r.Zxid, strings.Join(r.Paths, ","))
	}
	s += fmt.Sprintf(" seed=%d", r.Seed)
	if r.Note != "" {
		s += fmt.Sprintf(" note=%q", r.Note)
	}
	return s
}

// Run damages what o says, refusing while a server runs on the directory:
// it holds the log directory's lock (wal.LockDir) throughout, so no server
// starts on the files meanwhile either.
func Run(o Options) (Report, error) {
	if err := nsmap.ValidName(o.Namespace); err != nil {
		return Report{}, err
	}
	if o.Bytes == 0 {
		o.Bytes = DefaultBytes
	}
	if o.Bytes < 0 {
		return Report{}, fmt.Errorf("cannot flip %d bytes", o.Bytes)
	}
	if o.Target != Snapshot && o.Target != Log {
		return Report{}, fmt.Errorf("unknown target %q: snapshot or log", o.Target)
	}
	l, err := detect(o.DataDir)
	if err != nil {
		return Report{}, err
	}
	release, err := lock(o.DataDir, l.logDir)
	if err != nil {
		return Report{}, err
	}
	defer release()
	var tab nsmap.Table
	if err := tab.Declare(o.Namespace, nsmap.Strong); err != nil {
		return Report{}, err
	}
	in := func(path string) bool { return tab.Classify(path).Name == o.Namespace }
	var s span
	if o.Target == Snapshot {
		s, err = snapshotSpan(l, o, in)
	} else {
		s, err = logSpan(l, o, in)
	}
	if err != nil {
		return Report{}, err
	}
	rep := s.report
	rep.Target, rep.Layout, rep.File, rep.Seed = o.Target, l.name, s.file, o.Seed
	if l.note != "" {
		rep.Note = strings.TrimSuffix(l.note+"; "+rep.Note, "; ")
	}
	if rep.Offsets, err = flip(s.file, s.off, s.len, o.Bytes, o.Seed); err != nil {
		return Report{}, err
	}
	return rep, nil
}

// span is the bytes chosen for damage: len bytes from off in file, and
// what the report says of them.
type span struct {
	file     string
	off, len int64
	report   Report
}

// lock takes the log directory's lock, when there is a log directory (a
// server always has one once it ran).
func lock(dataDir, logDir string) (func() error, error) {
	if _, err := os.Stat(logDir); errors.Is(err, os.ErrNotExist) {
		return func() error { return nil }, nil
	}
	release, err := wal.LockDir(logDir)
	if errors.Is(err, wal.ErrLocked) {
		return nil, fmt.Errorf("a server is running on %s (its log %s is locked); stop it first", dataDir, logDir)
	}
	return release, err
}

// flip XORs n distinct bytes among the size bytes at off in file with
// nonzero values, both drawn from seed, and returns their offsets,
// ascending. It syncs the file, so the damage is on disk when it returns.
func flip(file string, off, size int64, n int, seed uint64) ([]int64, error) {
	r := rand.New(rand.NewPCG(seed, 0x636f7272757074))
	n = int(min(int64(n), size))
	chosen := make(map[int64]bool, n)
	var offs []int64
	for len(offs) < n {
		o := off + r.Int64N(size)
		if !chosen[o] {
			chosen[o] = true
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var b [1]byte
	for _, o := range offs {
		if _, err := f.ReadAt(b[:], o); err != nil {
			return nil, err
		}
		b[0] ^= byte(1 + r.IntN(255))
		if _, err := f.WriteAt(b[:], o); err != nil {
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	return offs, nil
}
