package wal

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// segmentVersions returns the format version of each segment of dir.
func segmentVersions(t *testing.T, dir string) []uint32 {
	t.Helper()
	var v []uint32
	for _, p := range segmentPaths(t, dir) {
		v = append(v, binary.LittleEndian.Uint32(mustRead(t, p)[4:8]))
	}
	return v
}

// TestTaggedRoundTrip writes a tagged log over several segments and reads
// it back with masks, online and offline.
func TestTaggedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{SegmentBytes: 4096, Tagged: true})
	want := makeRecs(1, 100)
	appendAll(t, l, want)
	if err := l.Append(101, []byte("untagged")); err != nil {
		t.Fatal(err)
	}
	want = append(want, rec{101, []byte("untagged")})
	closeT(t, l)
	for _, v := range segmentVersions(t, dir) {
		if v != versionTagged {
			t.Fatalf("segment versions %v, want all %d", segmentVersions(t, dir), versionTagged)
		}
	}
	wantMask := func(z int64) uint64 {
		if z == 101 {
			return MaskAll // Append: may touch anything
		}
		return maskFor(z)
	}
	l, _ = openT(t, dir, Options{SegmentBytes: 4096, Tagged: true})
	defer closeT(t, l)
	got := replayRecordsAll(t, l, 0)
	var recs []rec
	for _, r := range got {
		if !r.Tagged || r.Damaged || r.Mask != wantMask(r.Zxid) || r.Offset < segmentHeaderSize {
			t.Fatalf("record %+v, want mask %#x", r, wantMask(r.Zxid))
		}
		recs = append(recs, rec{r.Zxid, r.Payload})
	}
	checkRecs(t, recs, want)
	checkRecs(t, replayAll(t, l, 0), want)
	n := 0
	if err := Records(dir, func(r Record) error {
		if !r.Tagged || r.Mask != wantMask(r.Zxid) {
			t.Fatalf("Records: %+v, want mask %#x", r, wantMask(r.Zxid))
		}
		n++
		return nil
	}); err != nil || n != len(want) {
		t.Fatalf("Records saw %d records, want %d: %v", n, len(want), err)
	}
}

// TestMixedVersions turns Tagged on and off across reopens: the first
// append after each switch starts a segment of the other version, so each
// record
// is in a segment of the version in force when it was appended, and
// reads back with its mask only from a version 2 one.
func TestMixedVersions(t *testing.T) {
	dir := t.TempDir()
	var want []rec
	wantTagged := map[int64]bool{}
	next := int64(1)
	for i, tagged := range []bool{false, true, true, false, true} {
		l, _ := openT(t, dir, Options{Tagged: tagged})
		if i == 2 {
			// Nothing appended this time: the newest segment stays as it is.
			closeT(t, l)
			continue
		}
		recs := makeRecs(next, 5)
		appendAll(t, l, recs)
		for _, r := range recs {
			wantTagged[r.zxid] = tagged
		}
		want = append(want, recs...)
		next += 5
		closeT(t, l)
	}
	if got := segmentVersions(t, dir); len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 1 || got[3] != 2 {
		t.Fatalf("segment versions %v, want [1 2 1 2]", got)
	}
	l, _ := openT(t, dir, Options{})
	defer closeT(t, l)
	var recs []rec
	for _, r := range replayRecordsAll(t, l, 0) {
		wantMask := MaskAll
		if wantTagged[r.Zxid] {
			wantMask = maskFor(r.Zxid)
		}
		if r.Tagged != wantTagged[r.Zxid] || r.Mask != wantMask {
			t.Fatalf("record %+v, want tagged %v mask %#x", r, wantTagged[r.Zxid], wantMask)
		}
		recs = append(recs, rec{r.Zxid, r.Payload})
	}
	checkRecs(t, recs, want)
}

// TestVersionSwitchReplacesEmptySegment: a newest segment that holds no
// record and has the other version is replaced, under the same name, by
// the first append.
func TestVersionSwitchReplacesEmptySegment(t *testing.T) {
	dir := t.TempDir()
	forge(t, formats[0], dir, 0, encodeRecord(1, []byte("a")))
	empty := forge(t, formats[0], dir, 1)
	l, _ := openT(t, dir, Options{Tagged: true})
	appendAll(t, l, []rec{{2, []byte("b")}})
	closeT(t, l)
	if got := segmentPaths(t, dir); len(got) != 2 || got[1] != empty {
		t.Fatalf("segments %v, want the second replaced in place", got)
	}
	if got := segmentVersions(t, dir); got[0] != versionPlain || got[1] != versionTagged {
		t.Fatalf("segment versions %v, want [1 2]", got)
	}
	rep, err := Check(dir)
	if err != nil || rep.Records != 2 || rep.LastZxid != 2 {
		t.Fatalf("Check = %+v, %v", rep, err)
	}
}

// damagedLog builds a tagged log of recs over segments of 4096 bytes and
// flips a payload byte of recs[victim]. It returns the file and offset of
// the victim.
func damagedLog(t *testing.T, dir string, recs []rec, victim int) (string, int64) {
	t.Helper()
	l, _ := openT(t, dir, Options{SegmentBytes: 4096, Tagged: true})
	appendAll(t, l, recs)
	closeT(t, l)
	for _, p := range segmentPaths(t, dir) {
		for _, off := range recordOffsets(t, p) {
			b := mustRead(t, p)
			if int64(binary.LittleEndian.Uint64(b[off+8:])) == recs[victim].zxid {
				rewrite(t, p, func(b []byte) []byte { b[off] ^= 0x20; return b })
				return p, off
			}
		}
	}
	t.Fatalf("no record %#x", recs[victim].zxid)
	return "", 0
}

// TestKeepDamagedInOlderSegment: the last record of a segment that is not
// the newest is damaged; its successor's header names its zxid, so it is
// kept, and the log goes on after it.
func TestKeepDamagedInOlderSegment(t *testing.T) {
	dir := t.TempDir()
	recs := makeRecs(1, 40)
	l, _ := openT(t, dir, Options{SegmentBytes: 4096, Tagged: true})
	appendAll(t, l, recs)
	closeT(t, l)
	segs := segmentPaths(t, dir)
	if len(segs) < 2 {
		t.Fatalf("want several segments, got %v", segs)
	}
	offs := recordOffsets(t, segs[0])
	last := offs[len(offs)-1]
	victim := int(binary.LittleEndian.Uint64(mustRead(t, segs[0])[last+8:])) - 1
	rewrite(t, segs[0], func(b []byte) []byte { b[len(b)-1] ^= 1; return b })

	_, err := Open(dir, Options{Tagged: true})
	wantCorrupt(t, err, segs[0], last, "not the newest")
	l, _ = openT(t, dir, Options{SegmentBytes: 4096, Tagged: true, KeepDamaged: true})
	defer closeT(t, l)
	wantKept(t, l, recs, victim, segs[0], last)
	// The log appends after it as usual.
	more := makeRecs(41, 3)
	appendAll(t, l, more)
	if got := replayRecordsAll(t, l, 40); len(got) != 3 || got[0].Zxid != 41 {
		t.Fatalf("after appending: %+v", got)
	}
}

// TestKeepDamagedZxidOrder: a damaged record is kept only where its zxid
// fits, after the record before it and before the one after it.
func TestKeepDamagedZxidOrder(t *testing.T) {
	v2 := formats[1]
	p := []byte("payload")
	damaged := func(z int64) []byte {
		b := v2.encode(z, p)
		b[len(b)-1] ^= 1
		return b
	}
	tests := []struct {
		name   string
		recs   [][]byte
		reason string
	}{
		{"not after the previous", [][]byte{v2.encode(5, p), damaged(5), v2.encode(6, p)}, "does not follow"},
		{"not before the next", [][]byte{v2.encode(5, p), damaged(7), v2.encode(6, p)}, "does not follow"},
		{"not after the header's prev", [][]byte{damaged(4), v2.encode(6, p)}, "does not follow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := forge(t, v2, dir, 4, tt.recs...)
			_, err := Open(dir, Options{Tagged: true, KeepDamaged: true})
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.File != file {
				t.Fatalf("Open = %v, want a *CorruptError in %s", err, file)
			}
		})
	}
	t.Run("in order", func(t *testing.T) {
		dir := t.TempDir()
		file := forge(t, v2, dir, 4, v2.encode(5, p), damaged(6), damaged(8), v2.encode(9, p))
		l, _ := openT(t, dir, Options{Tagged: true, KeepDamaged: true})
		defer closeT(t, l)
		d := l.Damaged()
		if len(d) != 2 || d[0].Zxid != 6 || d[1].Zxid != 8 || d[0].Segment != file || d[1].Mask != maskFor(8) {
			t.Fatalf("Damaged() = %+v", d)
		}
	})
}

// TestKeepDamagedOnlyVersion2: a version 1 record with a damaged payload
// has no mask to keep; KeepDamaged leaves it corruption.
func TestKeepDamagedOnlyVersion2(t *testing.T) {
	dir := t.TempDir()
	b := encodeRecord(2, []byte("payload"))
	b[len(b)-1] ^= 1
	file := forge(t, formats[0], dir, 0, encodeRecord(1, nil), b, encodeRecord(3, nil))
	_, err := Open(dir, Options{KeepDamaged: true})
	wantCorrupt(t, err, file, segmentHeaderSize+recordHeaderSizePlain, "follows")
}

// TestKeepDamagedTruncateAndPurge: truncation and purge walk over a kept
// damaged record, and drop it from Damaged when they remove it.
func TestKeepDamagedTruncateAndPurge(t *testing.T) {
	recs := makeRecs(1, 60)
	t.Run("truncate", func(t *testing.T) {
		dir := t.TempDir()
		damagedLog(t, dir, recs, 50)
		l, _ := openT(t, dir, Options{SegmentBytes: 4096, Tagged: true, KeepDamaged: true})
		defer closeT(t, l)
		if err := l.TruncateAfter(55); err != nil {
			t.Fatal(err)
		}
		if d := l.Damaged(); len(d) != 1 || d[0].Zxid != 51 {
			t.Fatalf("Damaged() = %+v after truncating above it", d)
		}
		if err := l.TruncateAfter(50); err != nil {
			t.Fatal(err)
		}
		if d := l.Damaged(); len(d) != 0 || l.LastZxid() != 50 {
			t.Fatalf("Damaged() = %+v, LastZxid %#x after truncating it away", d, l.LastZxid())
		}
		checkRecs(t, replayAll(t, l, 0), recs[:50])
	})
	t.Run("truncated down to it", func(t *testing.T) {
		// Last in the newest segment, the kept record is cut at the next
		// Open like any damaged last record, and the cut names it.
		dir := t.TempDir()
		damagedLog(t, dir, recs, 50)
		opts := Options{SegmentBytes: 4096, Tagged: true, KeepDamaged: true}
		l, _ := openT(t, dir, opts)
		if err := l.TruncateAfter(51); err != nil {
			t.Fatal(err)
		}
		if d := l.Damaged(); len(d) != 1 || l.LastZxid() != 51 {
			t.Fatalf("Damaged() = %+v, LastZxid %#x after truncating down to it", d, l.LastZxid())
		}
		closeT(t, l)
		l, _ = openT(t, dir, opts)
		defer closeT(t, l)
		if cut := l.Cut(); !cut.Damaged || cut.Zxid != 51 || cut.Mask != maskFor(51) || l.LastZxid() != 50 || len(l.Damaged()) != 0 {
			t.Fatalf("Cut() = %+v, LastZxid %#x, Damaged() %+v", cut, l.LastZxid(), l.Damaged())
		}
	})
	t.Run("purge", func(t *testing.T) {
		dir := t.TempDir()
		file, _ := damagedLog(t, dir, recs, 2)
		l, _ := openT(t, dir, Options{SegmentBytes: 4096, Tagged: true, KeepDamaged: true})
		defer closeT(t, l)
		removed, err := l.PurgeBefore(40)
		if err != nil || len(removed) == 0 || removed[0] != file {
			t.Fatalf("PurgeBefore = %v, %v; want %s removed", removed, err, file)
		}
		if d := l.Damaged(); len(d) != 0 {
			t.Fatalf("Damaged() = %+v after purging its segment", d)
		}
	})
}

// TestCheckStaysStrict: Check and Records describe what Open does without
// KeepDamaged, so a kept damaged record is corruption to them.
func TestCheckStaysStrict(t *testing.T) {
	dir := t.TempDir()
	file, off := damagedLog(t, dir, makeRecs(1, 10), 4)
	_, err := Check(dir)
	wantCorrupt(t, err, file, off, "record checksum mismatch")
	err = Records(dir, func(Record) error { return nil })
	wantCorrupt(t, err, file, off, "record checksum mismatch")
}

// TestVersion1BytesUnchanged pins the bytes an untagged log writes: a log
// with nothing tagged keeps the on-disk format it always had.
func TestVersion1BytesUnchanged(t *testing.T) {
	dir := t.TempDir()
	forge(t, formats[0], dir, 0x29)
	l, _ := openT(t, dir, Options{})
	if err := l.AppendTagged(0x100000007, 0x5, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	closeT(t, l)
	const want = "4757414c0100000029000000000000001156766d000000000000000000000000" +
		"a0f611ed030000000700000001000000b166ee5f616263"
	if got := hex.EncodeToString(mustRead(t, segmentPaths(t, dir)[0])); got != want {
		t.Fatalf("untagged log holds\n%s\nwant\n%s", got, want)
	}
}
