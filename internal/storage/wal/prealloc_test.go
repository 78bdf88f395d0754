package wal

import (
	"encoding/binary"
	"os"
	"testing"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// TestZerosWrittenAhead: the active segment is filled with zeros ahead of
// its records; a crash leaves them (recovery cuts them as a zero-filled
// tail and keeps every record), while Close and rotation cut them, so no
// segment but the newest ever holds them.
func TestZerosWrittenAhead(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{})
	recs := makeRecs(1, 50)
	appendAll(t, l, recs)
	path := segmentPaths(t, dir)[0]
	if got, want := fileSize(t, path), int64(segmentHeaderSize+preallocBytes); got != want {
		t.Fatalf("active segment is %d bytes, want %d (zeros written ahead)", got, want)
	}

	// A crash: the directory as it is, without Close.
	crashed := copyDir(t, dir)
	l2, logs := openT(t, crashed, Options{})
	checkRecs(t, replayAll(t, l2, 0), recs)
	end := recordOffsets(t, segmentPaths(t, crashed)[0])
	last := end[len(end)-1]
	wantTornWarning(t, logs, segmentPaths(t, crashed)[0], last+recordHeaderSize+int64(len(recs[len(recs)-1].payload)))
	more := makeRecs(51, 10)
	appendAll(t, l2, more)
	closeT(t, l2)
	l3, logs3 := openT(t, crashed, Options{})
	checkRecs(t, replayAll(t, l3, 0), append(recs, more...))
	if w := logs3.warnings(); len(w) != 0 {
		t.Fatalf("warnings after a clean close: %v", w)
	}
	closeT(t, l3)

	closeT(t, l)
	var records int64 = segmentHeaderSize
	for _, r := range recs {
		records += recordHeaderSize + int64(len(r.payload))
	}
	if got := fileSize(t, path); got != records {
		t.Fatalf("after Close the segment is %d bytes, want %d (its records)", got, records)
	}
}

// TestZerosCutAtRotation: sealed segments end at their last record, and a
// crash after several rotations recovers every synced record.
func TestZerosCutAtRotation(t *testing.T) {
	dir := t.TempDir()
	const seg = 8 << 10
	l, _ := openT(t, dir, Options{SegmentBytes: seg})
	recs := makeRecs(1, 300)
	appendAll(t, l, recs)
	paths := segmentPaths(t, dir)
	if len(paths) < 3 {
		t.Fatalf("%d segments, want several", len(paths))
	}
	for _, p := range paths[:len(paths)-1] {
		offs := recordOffsets(t, p)
		if len(offs) == 0 {
			t.Fatalf("%s holds no record", p)
		}
		b := mustRead(t, p)
		lastOff := offs[len(offs)-1]
		n := int64(len(b))
		if end := lastOff + recordHeaderSize + int64(binary.LittleEndian.Uint32(b[lastOff+4:])); end != n {
			t.Fatalf("sealed segment %s is %d bytes but its records end at %d", p, n, end)
		}
	}
	if got := fileSize(t, paths[len(paths)-1]); got != seg {
		t.Fatalf("newest segment is %d bytes, want %d (zeros up to the segment size)", got, seg)
	}
	crashed := copyDir(t, dir)
	l2, _ := openT(t, crashed, Options{SegmentBytes: seg})
	checkRecs(t, replayAll(t, l2, 0), recs)
	closeT(t, l2)
	closeT(t, l)
}

// TestTruncateAfterWithZerosAhead: truncating the active segment drops the
// records and the zeros after them; appends after it land where the kept
// records end, and a crash then recovers exactly the new history.
func TestTruncateAfterWithZerosAhead(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{})
	recs := makeRecs(1, 40)
	appendAll(t, l, recs)
	if err := l.TruncateAfter(25); err != nil {
		t.Fatal(err)
	}
	again := makeRecs(26, 30)
	for i := range again {
		again[i].payload = append([]byte("new "), again[i].payload...)
	}
	appendAll(t, l, again)
	want := append(append([]rec{}, recs[:25]...), again...)
	checkRecs(t, replayAll(t, l, 0), want)
	crashed := copyDir(t, dir)
	l2, _ := openT(t, crashed, Options{})
	checkRecs(t, replayAll(t, l2, 0), want)
	if err := l2.TruncateAfter(10); err != nil {
		t.Fatal(err)
	}
	checkRecs(t, replayAll(t, l2, 0), want[:10])
	closeT(t, l2)
	closeT(t, l)
}
