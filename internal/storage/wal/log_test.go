package wal

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name         string
		segmentBytes int64
		first        int64
		n            int
	}{
		{"empty", 0, 1, 0},
		{"one record", 0, 1, 1},
		{"one segment", 0, 1, 200},
		{"many segments", 2048, 1, 200},
		{"epoch zxids", 4096, 5<<32 | 1, 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: tt.segmentBytes}
			l, _ := openT(t, dir, opts)
			want := makeRecs(tt.first, tt.n)
			appendAll(t, l, want)
			checkRecs(t, replayAll(t, l, 0), want)
			closeT(t, l)

			l, logs := openT(t, dir, opts)
			defer closeT(t, l)
			if w := logs.warnings(); len(w) != 0 {
				t.Fatalf("clean reopen logged warnings: %v", w)
			}
			wantLast := int64(0)
			if tt.n > 0 {
				wantLast = want[tt.n-1].zxid
			}
			if got := l.LastZxid(); got != wantLast {
				t.Fatalf("LastZxid = %#x, want %#x", got, wantLast)
			}
			checkRecs(t, replayAll(t, l, 0), want)
			// Replaying from every point yields exactly the suffix.
			for i := 0; i < tt.n; i += 7 {
				checkRecs(t, replayAll(t, l, want[i].zxid), want[i+1:])
			}
			// The reopened log keeps appending after its last record.
			more := makeRecs(max(wantLast, tt.first-1)+1, 3)
			appendAll(t, l, more)
			checkRecs(t, replayAll(t, l, 0), append(want, more...))
		})
	}
}

func TestReplaySeesUnsyncedRecords(t *testing.T) {
	l, _ := openT(t, t.TempDir(), Options{})
	defer closeT(t, l)
	want := makeRecs(1, 10)
	for _, r := range want {
		if err := l.Append(r.zxid, r.payload); err != nil {
			t.Fatal(err)
		}
	}
	checkRecs(t, replayAll(t, l, 0), want)
}

func TestReplayPayloadsAreNotShared(t *testing.T) {
	l, _ := openT(t, t.TempDir(), Options{})
	defer closeT(t, l)
	want := makeRecs(1, 20)
	appendAll(t, l, want)
	got := replayAll(t, l, 0) // keeps every payload slice
	checkRecs(t, got, want)
}

func TestReplayStopsOnCallbackError(t *testing.T) {
	l, _ := openT(t, t.TempDir(), Options{})
	defer closeT(t, l)
	appendAll(t, l, makeRecs(1, 10))
	stop := errors.New("stop")
	calls := 0
	err := l.Replay(0, func(z int64, _ []byte) error {
		calls++
		if z == 4 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 4 {
		t.Fatalf("Replay = %v after %d calls, want the callback's error after 4", err, calls)
	}
}

func TestRotation(t *testing.T) {
	const segmentBytes = 1024
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{SegmentBytes: segmentBytes})
	want := makeRecs(1, 100)
	// One record larger than a segment gets a segment of its own.
	want = append(want, rec{101, payloadFor(101, 3*segmentBytes)}, rec{102, payloadFor(102, 10)})
	appendAll(t, l, want)
	closeT(t, l)

	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 10 {
		t.Fatalf("got %d segments, want rotation at %d bytes", len(segs), segmentBytes)
	}
	prevLast := int64(0)
	for _, s := range segs {
		info, err := validateSegment(s, false, false)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(s.path) != segmentName(s.base) || info.header.prev != prevLast {
			t.Fatalf("segment %s: base %#x prev %#x, previous ended at %#x", s.path, s.base, info.header.prev, prevLast)
		}
		if info.size > segmentBytes && info.records != 1 {
			t.Fatalf("segment %s is %d bytes with %d records", s.path, info.size, info.records)
		}
		prevLast = info.lastZxid
	}
	l, _ = openT(t, dir, Options{SegmentBytes: segmentBytes})
	defer closeT(t, l)
	checkRecs(t, replayAll(t, l, 0), want)
	checkRecs(t, replayAll(t, l, 50), want[50:])
}

func TestAppendRejects(t *testing.T) {
	l, _ := openT(t, t.TempDir(), Options{})
	defer closeT(t, l)
	appendAll(t, l, makeRecs(10, 1))
	tests := []struct {
		name    string
		zxid    int64
		payload []byte
		want    error
	}{
		{"zero zxid", 0, nil, ErrZxidOrder},
		{"negative zxid", -5, nil, ErrZxidOrder},
		{"same zxid", 10, nil, ErrZxidOrder},
		{"older zxid", 9, nil, ErrZxidOrder},
		{"too large", 11, make([]byte, MaxPayloadBytes+1), ErrTooLarge},
	}
	for _, tt := range tests {
		if err := l.Append(tt.zxid, tt.payload); !errors.Is(err, tt.want) {
			t.Errorf("%s: Append = %v, want %v", tt.name, err, tt.want)
		}
	}
	// A rejected append changes nothing.
	appendAll(t, l, makeRecs(11, 1))
	checkRecs(t, replayAll(t, l, 0), append(makeRecs(10, 1), makeRecs(11, 1)...))
}

func TestClosedLog(t *testing.T) {
	l, _ := openT(t, t.TempDir(), Options{})
	closeT(t, l)
	checks := map[string]error{
		"Append":        l.Append(1, nil),
		"Sync":          l.Sync(),
		"TruncateAfter": l.TruncateAfter(0),
		"Replay":        l.Replay(0, func(int64, []byte) error { return nil }),
		"Close":         l.Close(),
	}
	_, checks["PurgeBefore"] = l.PurgeBefore(0)
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s on a closed log = %v, want ErrClosed", name, err)
		}
	}
}

func TestOpenTwice(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{})
	if _, err := Open(dir, Options{}); err == nil {
		t.Fatal("second Open of the same directory succeeded")
	}
	closeT(t, l)
	l, _ = openT(t, dir, Options{}) // released by Close
	closeT(t, l)
}

func TestTruncateAfter(t *testing.T) {
	// Zxids 1..60 with a gap, in small segments so that truncation points
	// fall inside segments, on their boundaries and before everything.
	base := append(makeRecs(1, 30), makeRecs(100, 30)...)
	tests := []struct {
		name  string
		after int64
		keep  int // records of base kept
	}{
		{"nothing to drop", 129, 60},
		{"beyond the end", 500, 60},
		{"last record", 128, 59},
		{"inside the gap", 50, 30},
		{"middle", 15, 15},
		{"first record", 1, 1},
		{"everything", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := Options{SegmentBytes: 1500}
			l, _ := openT(t, dir, opts)
			appendAll(t, l, base)
			// Unsynced records are dropped too.
			if err := l.Append(200, []byte("unsynced")); err != nil {
				t.Fatal(err)
			}
			if err := l.TruncateAfter(tt.after); err != nil {
				t.Fatal(err)
			}
			want := base[:tt.keep]
			wantLast := int64(0)
			if tt.keep > 0 {
				wantLast = want[tt.keep-1].zxid
			}
			if tt.after >= 200 {
				want = append(want, rec{200, []byte("unsynced")})
				wantLast = 200
			}
			if got := l.LastZxid(); got != wantLast {
				t.Fatalf("LastZxid after truncate = %#x, want %#x", got, wantLast)
			}
			checkRecs(t, replayAll(t, l, 0), want)
			// The dropped zxids can be written again.
			more := makeRecs(wantLast+1, 5)
			for i := range more {
				more[i].payload = append(more[i].payload, 'x')
			}
			appendAll(t, l, more)
			closeT(t, l)

			l, logs := openT(t, dir, opts)
			defer closeT(t, l)
			if w := logs.warnings(); len(w) != 0 {
				t.Fatalf("reopen after truncate logged warnings: %v", w)
			}
			checkRecs(t, replayAll(t, l, 0), append(want, more...))
		})
	}
}

func TestPurgeBefore(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{SegmentBytes: 1024})
	defer closeT(t, l)
	want := makeRecs(1, 200)
	appendAll(t, l, want)
	before := segmentPaths(t, dir)

	const snapZxid = 120
	removed, err := l.PurgeBefore(snapZxid)
	if err != nil {
		t.Fatal(err)
	}
	after := segmentPaths(t, dir)
	if len(removed) == 0 || len(removed)+len(after) != len(before) {
		t.Fatalf("removed %d of %d segments, %d left", len(removed), len(before), len(after))
	}
	if trash, _ := filepath.Glob(filepath.Join(dir, "*"+fsutil.TrashSuffix)); len(trash) != 0 {
		t.Fatalf("purge left %v", trash)
	}
	// What is left starts at or before snapZxid+1 and replays from there.
	checkRecs(t, replayAll(t, l, snapZxid), want[snapZxid:])
	first, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first[0].base > snapZxid+1 {
		t.Fatalf("oldest kept segment starts at %#x, past %#x", first[0].base, snapZxid+1)
	}
	// The deleted segments are exactly those whose successor starts at or
	// before snapZxid+1.
	if len(first) > 1 && first[1].base <= snapZxid+1 {
		t.Fatalf("segment %s was needed by nobody but kept", first[0].path)
	}
	// Replaying from before the purge point is refused, not silently short.
	if err := l.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, ErrPurged) {
		t.Fatalf("Replay(0) after purge = %v, want ErrPurged", err)
	}
	// Purging past the end keeps the newest segment.
	if _, err := l.PurgeBefore(1 << 40); err != nil {
		t.Fatal(err)
	}
	if got := segmentPaths(t, dir); len(got) != 1 || got[0] != after[len(after)-1] {
		t.Fatalf("purge past the end left %v", got)
	}
	appendAll(t, l, makeRecs(201, 1))
	if l.LastZxid() != 201 {
		t.Fatalf("LastZxid = %d after appending 201", l.LastZxid())
	}
}

func TestTruncateAfterPurge(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 1024}
	l, _ := openT(t, dir, opts)
	defer closeT(t, l)
	appendAll(t, l, makeRecs(1, 100))
	if _, err := l.PurgeBefore(60); err != nil {
		t.Fatal(err)
	}
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	start := segs[0].base - 1 // the log now starts after this zxid
	if start == 0 || start > 60 {
		t.Fatalf("purge up to 60 left a log starting after %#x", start)
	}
	// Below the start there is nothing to drop: refused, log unchanged.
	if err := l.TruncateAfter(start - 1); !errors.Is(err, ErrPurged) {
		t.Fatalf("TruncateAfter below the purge point = %v, want ErrPurged", err)
	}
	checkRecs(t, replayAll(t, l, start), makeRecs(start+1, int(100-start)))
	// Exactly at the start: every record goes, but the oldest segment stays
	// (empty) and still says where the log starts.
	if err := l.TruncateAfter(start); err != nil {
		t.Fatal(err)
	}
	if got := l.LastZxid(); got != start {
		t.Fatalf("LastZxid = %#x, want %#x", got, start)
	}
	if err := l.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, ErrPurged) {
		t.Fatalf("Replay(0) of an emptied purged log = %v, want ErrPurged", err)
	}
	if got := segmentPaths(t, dir); len(got) != 1 || got[0] != segs[0].path {
		t.Fatalf("segments after truncating to the start: %v", got)
	}
	// A new epoch continues the log.
	more := []rec{{7 << 32, []byte("new epoch")}}
	appendAll(t, l, more)
	checkRecs(t, replayAll(t, l, start), more)
}

func TestPurgeDir(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{SegmentBytes: 1024})
	appendAll(t, l, makeRecs(1, 100))
	n := len(segmentPaths(t, dir))
	// While the log is open, the purge goes through it.
	removed, err := PurgeDir(dir, 30, nil)
	if err != nil || len(removed) == 0 {
		t.Fatalf("PurgeDir on an open log: removed %v, %v", removed, err)
	}
	checkRecs(t, replayAll(t, l, 30), makeRecs(31, 70))
	closeT(t, l)
	// Closed, PurgeDir takes the lock itself.
	removed2, err := PurgeDir(dir, 60, slog.New(slog.DiscardHandler))
	if err != nil || len(removed2) == 0 {
		t.Fatalf("PurgeDir on a closed log: removed %v, %v", removed2, err)
	}
	if got := len(segmentPaths(t, dir)); got != n-len(removed)-len(removed2) {
		t.Fatalf("%d segments left, want %d", got, n-len(removed)-len(removed2))
	}
	l, _ = openT(t, dir, Options{SegmentBytes: 1024})
	defer closeT(t, l)
	checkRecs(t, replayAll(t, l, 60), makeRecs(61, 40))
	if removed, err := PurgeDir(filepath.Join(dir, "missing"), 10, nil); err != nil || removed != nil {
		t.Fatalf("PurgeDir on a missing directory = %v, %v", removed, err)
	}
}

// TestConcurrentAppendAndSync runs a writer and a syncer goroutine, the
// pipelined use the package allows, and checks that every record the
// syncer saw appended before a Sync is durable and intact after reopening.
func TestConcurrentAppendAndSync(t *testing.T) {
	dir := t.TempDir()
	opts := Options{SegmentBytes: 8 << 10}
	l, _ := openT(t, dir, opts)
	const n = 2000
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if err := l.Sync(); err != nil {
				t.Error(err)
				return
			}
			_ = l.LastZxid()
		}
	}()
	want := makeRecs(1, n)
	for _, r := range want {
		if err := l.Append(r.zxid, r.payload); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	closeT(t, l)
	l, _ = openT(t, dir, opts)
	defer closeT(t, l)
	checkRecs(t, replayAll(t, l, 0), want)
}

func TestOpenCreatesDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	l, _ := openT(t, dir, Options{})
	closeT(t, l)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		t.Fatalf("Open did not create %s: %v", dir, err)
	}
}

// TestFlushSurvivesProcessCrash: what Flush returned for is in the files
// the operating system holds, so a process killed right after (its
// buffers lost, its files as they are) recovers every record. The image of
// the directory is copied while the log is still open, as a kill -9 leaves
// it.
func TestFlushSurvivesProcessCrash(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{NoSync: true})
	defer closeT(t, l)
	want := makeRecs(1, 10)
	for _, r := range want {
		if err := l.Append(r.zxid, r.payload); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		t.Fatal(err)
	}
	image := t.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(image, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crashed, _ := openT(t, image, Options{NoSync: true})
	defer closeT(t, crashed)
	checkRecs(t, replayAll(t, crashed, 0), want)
}

// TestStartAfter checks that a log begun after a zxid refuses a replay
// from before it, replays and appends after it, and keeps its start
// across a reopen.
func TestStartAfter(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.StartAfter(0x500000007); err != nil {
		t.Fatal(err)
	}
	if err := l.StartAfter(9); err == nil {
		t.Fatal("StartAfter twice succeeded")
	}
	if err := l.Append(0x500000007, []byte("x")); !errors.Is(err, ErrZxidOrder) {
		t.Fatalf("append at the start: %v", err)
	}
	if err := l.Append(0x500000008, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	l.Close()
	l, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, ErrPurged) {
		t.Fatalf("replay from 0: %v, want ErrPurged", err)
	}
	var got []int64
	if err := l.Replay(0x500000007, func(z int64, _ []byte) error { got = append(got, z); return nil }); err != nil || len(got) != 1 {
		t.Fatalf("replay after the start: %v, %v", got, err)
	}
}

// TestWrittenCountsRecordBytes: Options.Written grows by exactly the
// records' bytes, headers included, in both formats and across segment
// rotations: the segments on disk hold those bytes plus one segment
// header each. A reopened Log sharing the counter keeps adding to it.
func TestWrittenCountsRecordBytes(t *testing.T) {
	forFormats(t, func(t *testing.T, f format) {
		dir := t.TempDir()
		var written atomic.Uint64
		opts := f.opts(Options{SegmentBytes: 2048, Written: &written})
		l, _ := openT(t, dir, opts)
		recs := makeRecs(1, 60)
		appendAll(t, l, recs)
		closeT(t, l)
		l, _ = openT(t, dir, opts)
		more := makeRecs(61, 20)
		appendAll(t, l, more)
		closeT(t, l)

		var want, onDisk int64
		for _, r := range append(recs, more...) {
			want += f.hdr() + int64(len(r.payload))
		}
		paths := segmentPaths(t, dir)
		for _, p := range paths {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			onDisk += fi.Size() - segmentHeaderSize
		}
		if got := int64(written.Load()); got != want || onDisk != want {
			t.Fatalf("Written %d, records on disk %d bytes in %d segments; want %d", got, onDisk, len(paths), want)
		}
	})
}
