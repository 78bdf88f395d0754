package wal

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logRecorder is a slog.Handler that keeps every record, so tests can check
// that recovery logged what it dropped.
type logRecorder struct {
	mu      sync.Mutex
	entries []logEntry
}

type logEntry struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	e := logEntry{level: rec.Level, msg: rec.Message, attrs: map[string]string{}}
	rec.Attrs(func(a slog.Attr) bool {
		e.attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, e)
	return nil
}

// warnings returns the warnings logged so far.
func (r *logRecorder) warnings() []logEntry {
	r.mu.Lock()
	defer r.mu.Unlock()
	var w []logEntry
	for _, e := range r.entries {
		if e.level >= slog.LevelWarn {
			w = append(w, e)
		}
	}
	return w
}

// rec is a record as the tests see it. Its namespace mask is maskFor(zxid).
type rec struct {
	zxid    int64
	payload []byte
}

// format is a record format the tests run against, and whether the log
// is opened with KeepDamaged.
type format struct {
	name        string
	tagged      bool
	keepDamaged bool
}

// formats are both record formats: every recovery test runs for each.
var formats = []format{{"v1", false, false}, {"v2", true, false}}

// forFormats runs test once per record format, as a subtest.
func forFormats(t *testing.T, test func(t *testing.T, f format)) {
	for _, f := range formats {
		t.Run(f.name, func(t *testing.T) { test(t, f) })
	}
}

// forTailFormats is forFormats plus version 2 opened with KeepDamaged,
// which must not change what a torn tail is.
func forTailFormats(t *testing.T, test func(t *testing.T, f format)) {
	forFormats(t, test)
	t.Run("v2 KeepDamaged", func(t *testing.T) { test(t, format{"v2 KeepDamaged", true, true}) })
}

// opts returns o for a log of this format.
func (f format) opts(o Options) Options {
	o.Tagged, o.KeepDamaged = f.tagged, f.keepDamaged
	return o
}

// version is the segment format version the format writes.
func (f format) version() uint32 {
	if f.tagged {
		return versionTagged
	}
	return versionPlain
}

// hdr is the size of a record header in this format.
func (f format) hdr() int64 { return int64(recordHeaderSize(f.version())) }

// encode returns the bytes of one record, for tests that forge files.
func (f format) encode(zxid int64, payload []byte) []byte {
	b := make([]byte, f.hdr()+int64(len(payload)))
	putRecordHeader(b[:f.hdr()], zxid, maskFor(zxid), payload)
	copy(b[f.hdr():], payload)
	return b
}

// wantMask is the mask a record of this format reads back with.
func (f format) wantMask(zxid int64) uint64 {
	if f.tagged {
		return maskFor(zxid)
	}
	return MaskAll
}

// maskFor returns a deterministic namespace mask for zxid, including 0
// and MaskAll now and then.
func maskFor(zxid int64) uint64 {
	switch zxid % 7 {
	case 0:
		return 0
	case 1:
		return MaskAll
	}
	return uint64(zxid)*0x9e3779b97f4a7c15 ^ uint64(zxid)<<3
}

// payloadFor returns deterministic content for zxid, so any record read
// back can be checked without remembering what was written.
func payloadFor(zxid int64, size int) []byte {
	p := make([]byte, size)
	x := uint64(zxid)*0x9e3779b97f4a7c15 + 1
	for i := range p {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		p[i] = byte(x)
	}
	return p
}

// sizeFor gives records of varied sizes, including empty ones.
func sizeFor(zxid int64) int { return int(zxid * 37 % 301) }

func openT(t testing.TB, dir string, opts Options) (*Log, *logRecorder) {
	t.Helper()
	r := &logRecorder{}
	if opts.Logger == nil {
		opts.Logger = slog.New(r)
	}
	l, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return l, r
}

// appendAll appends recs and syncs.
func appendAll(t testing.TB, l *Log, recs []rec) {
	t.Helper()
	for _, r := range recs {
		if err := l.AppendTagged(r.zxid, maskFor(r.zxid), r.payload); err != nil {
			t.Fatalf("AppendTagged(%#x): %v", r.zxid, err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatalf("Sync: %v", err)
	}
}

// makeRecs returns records with zxids first..first+n-1 of varied sizes.
func makeRecs(first int64, n int) []rec {
	recs := make([]rec, n)
	for i := range recs {
		z := first + int64(i)
		recs[i] = rec{zxid: z, payload: payloadFor(z, sizeFor(z))}
	}
	return recs
}

func replayAll(t testing.TB, l *Log, from int64) []rec {
	t.Helper()
	var got []rec
	if err := l.Replay(from, func(z int64, p []byte) error {
		got = append(got, rec{z, p})
		return nil
	}); err != nil {
		t.Fatalf("Replay(%#x): %v", from, err)
	}
	return got
}

// replayRecordsAll returns every record ReplayRecords hands over after from.
func replayRecordsAll(t testing.TB, l *Log, from int64) []Record {
	t.Helper()
	var got []Record
	if err := l.ReplayRecords(from, func(r Record) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatalf("ReplayRecords(%#x): %v", from, err)
	}
	return got
}

func checkRecs(t testing.TB, got, want []rec) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d (got zxids %v)", len(got), len(want), zxids(got))
	}
	for i := range want {
		if got[i].zxid != want[i].zxid || string(got[i].payload) != string(want[i].payload) {
			t.Fatalf("record %d: got zxid %#x (%d bytes), want %#x (%d bytes)",
				i, got[i].zxid, len(got[i].payload), want[i].zxid, len(want[i].payload))
		}
	}
}

func zxids(recs []rec) []int64 {
	z := make([]int64, len(recs))
	for i, r := range recs {
		z[i] = r.zxid
	}
	return z
}

func closeT(t testing.TB, l *Log) {
	t.Helper()
	if err := l.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// segmentPaths lists the segment files of dir.
func segmentPaths(t testing.TB, dir string) []string {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	var p []string
	for _, s := range segs {
		p = append(p, s.path)
	}
	return p
}

// recordOffsets returns the offset of every record in the segment file
// that has a complete header.
func recordOffsets(t testing.TB, path string) []int64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	hs := int64(recordHeaderSize(binary.LittleEndian.Uint32(b[4:8])))
	var offs []int64
	for off := int64(segmentHeaderSize); off+hs <= int64(len(b)); {
		offs = append(offs, off)
		off += hs + int64(binary.LittleEndian.Uint32(b[off+4:]))
	}
	return offs
}

// copyDir copies the regular files of src into a new temporary directory.
func copyDir(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || e.Name() == lockName {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// rewrite applies edit to the bytes of the file at path.
func rewrite(t testing.TB, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// encodeRecord returns the bytes of one version 1 record, for tests that
// forge files.
func encodeRecord(zxid int64, payload []byte) []byte { return formats[0].encode(zxid, payload) }

// wantCorrupt checks that err is a *CorruptError at file and offset whose
// reason contains reason.
func wantCorrupt(t testing.TB, err error, file string, off int64, reason string) {
	t.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("got error %v, want *CorruptError", err)
	}
	if ce.File != file || ce.Offset != off || !strings.Contains(ce.Reason, reason) {
		t.Fatalf("got %v, want file %s offset %d reason containing %q", ce, file, off, reason)
	}
}

// wantTornWarning checks that exactly one torn-tail warning was logged for
// file at offset.
func wantTornWarning(t testing.TB, r *logRecorder, file string, off int64) {
	t.Helper()
	var found []logEntry
	for _, w := range r.warnings() {
		if strings.Contains(w.msg, "torn tail") || strings.Contains(w.msg, "damaged record") {
			found = append(found, w)
		}
	}
	if len(found) != 1 {
		t.Fatalf("got %d torn-tail warnings, want 1 (all warnings: %v)", len(found), r.warnings())
	}
	w := found[0]
	if w.attrs["file"] != file || w.attrs["offset"] != fmt.Sprint(off) || w.attrs["bytes_dropped"] == "0" {
		t.Fatalf("torn-tail warning %v, want file %s offset %d", w.attrs, file, off)
	}
}
