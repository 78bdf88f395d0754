package wal

import (
	"bytes"
	"fmt"
	"os"
	"testing"
)

// TestRecordsAndCheckOffline reads a log of several segments without
// opening it: every record in order with its place, a report matching the
// log, and nothing changed on disk (the directory stays unlocked).
func TestRecordsAndCheckOffline(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{SegmentBytes: 4096})
	want := makeRecs(1, 200)
	appendAll(t, l, want)
	closeT(t, l)
	segs := segmentPaths(t, dir)
	if len(segs) < 3 {
		t.Fatalf("%d segments, want several", len(segs))
	}
	before := snapshotDir(t, dir)

	var got []rec
	err := Records(dir, func(r Record) error {
		if r.Offset < segmentHeaderSize || r.Segment == "" {
			t.Errorf("record %#x at %s offset %d", r.Zxid, r.Segment, r.Offset)
		}
		// The payload is in the file where PayloadOffset says.
		f, err := os.ReadFile(r.Segment)
		if err != nil {
			return err
		}
		if end := r.PayloadOffset + int64(len(r.Payload)); r.PayloadOffset <= r.Offset || end > int64(len(f)) ||
			!bytes.Equal(f[r.PayloadOffset:end], r.Payload) {
			t.Errorf("record %#x: payload not at offset %d of %s", r.Zxid, r.PayloadOffset, r.Segment)
		}
		got = append(got, rec{r.Zxid, append([]byte(nil), r.Payload...)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checkRecs(t, got, want)
	rep, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Segments != len(segs) || rep.Records != 200 || rep.After != 0 || rep.LastZxid != 200 || rep.Tail.Bytes != 0 {
		t.Fatalf("Check = %+v", rep)
	}
	if after := snapshotDir(t, dir); after != before {
		t.Fatal("reading the log offline changed the directory")
	}
}

// TestCheckFindsDamage: a flipped byte in a record with valid records
// after it is corruption at that record's offset, for Check and Records
// (after the records before it); one in the last record is a tail Open
// would cut, reported as damaged; a torn write as not damaged.
func TestCheckFindsDamage(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{})
	appendAll(t, l, makeRecs(1, 50))
	closeT(t, l)
	seg := segmentPaths(t, dir)[0]
	offs := recordOffsets(t, seg)

	mid := copyDir(t, dir)
	midSeg := segmentPaths(t, mid)[0]
	rewrite(t, midSeg, func(b []byte) []byte { b[offs[20]+recordHeaderSizePlain+1] ^= 0x40; return b })
	_, err := Check(mid)
	wantCorrupt(t, err, midSeg, offs[20], "record checksum mismatch")
	n := 0
	err = Records(mid, func(Record) error { n++; return nil })
	wantCorrupt(t, err, midSeg, offs[20], "record checksum mismatch")
	if n != 20 {
		t.Fatalf("Records saw %d records before the damage, want 20", n)
	}

	end := copyDir(t, dir)
	endSeg := segmentPaths(t, end)[0]
	rewrite(t, endSeg, func(b []byte) []byte { b[offs[49]+recordHeaderSizePlain+1] ^= 0x40; return b })
	rep, err := Check(end)
	if err != nil || !rep.Tail.Damaged || rep.TailOffset != offs[49] || rep.TailFile != endSeg || rep.LastZxid != 49 {
		t.Fatalf("Check of a damaged last record = %+v, %v", rep, err)
	}

	torn := copyDir(t, dir)
	tornSeg := segmentPaths(t, torn)[0]
	rewrite(t, tornSeg, func(b []byte) []byte { return b[:len(b)-3] })
	rep, err = Check(torn)
	if err != nil || rep.Tail.Damaged || rep.Tail.Bytes == 0 || rep.TailOffset != offs[49] {
		t.Fatalf("Check of a torn last record = %+v, %v", rep, err)
	}
}

// snapshotDir describes the names, sizes and times of dir's files.
func snapshotDir(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintln(e.Name(), fi.ModTime(), fi.Size())
	}
	return s
}
