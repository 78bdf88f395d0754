package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// pristine builds a log of k records in dir and returns them and the path
// and offset of the last record. With rotateLast, the last record starts a
// new segment of its own.
func pristine(t *testing.T, f format, k int, rotateLast bool) (dir string, recs []rec, lastFile string, lastOff int64) {
	t.Helper()
	dir = t.TempDir()
	l, _ := openT(t, dir, f.opts(Options{SegmentBytes: 4096}))
	recs = makeRecs(1, k)
	if rotateLast {
		// Fill the first segment so that the last record cannot fit.
		recs[k-2].payload = payloadFor(recs[k-2].zxid, 3900)
	}
	appendAll(t, l, recs)
	closeT(t, l)
	paths := segmentPaths(t, dir)
	lastFile = paths[len(paths)-1]
	offs := recordOffsets(t, lastFile)
	if rotateLast && (len(paths) < 2 || len(offs) != 1) {
		t.Fatalf("want the last record alone in the newest segment, got %v", paths)
	}
	return dir, recs, lastFile, offs[len(offs)-1]
}

// reopenAfterDamage opens a copy of dir, a log of format f, after damage
// was applied to the copy of file, and checks that exactly want survives
// with a torn-tail warning at the offset the damage starts.
func reopenAfterDamage(t *testing.T, f format, dir, file string, damage func([]byte) []byte, want []rec, cutAt int64) TailCut {
	t.Helper()
	cp := copyDir(t, dir)
	cpFile := filepath.Join(cp, filepath.Base(file))
	rewrite(t, cpFile, damage)
	// Recovery logic, not fsync, is under test here; NoSync keeps the
	// hundreds of reopens fast.
	l, logs := openT(t, cp, f.opts(Options{SegmentBytes: 4096, NoSync: true}))
	defer closeT(t, l)
	wantTornWarning(t, logs, cpFile, cutAt)
	if got := l.LastZxid(); got != want[len(want)-1].zxid {
		t.Fatalf("LastZxid = %#x, want %#x", got, want[len(want)-1].zxid)
	}
	checkRecs(t, replayAll(t, l, 0), want)
	// The repaired log accepts the lost zxid again, and survives reopening.
	again := rec{want[len(want)-1].zxid + 1, []byte("rewritten")}
	appendAll(t, l, []rec{again})
	checkRecs(t, replayAll(t, l, 0), append(append([]rec{}, want...), again))
	if d := l.Damaged(); len(d) != 0 {
		t.Fatalf("Damaged() = %+v after cutting a torn tail", d)
	}
	return l.Cut()
}

// payloadStride is the step between the payload bytes the damage tests
// try. Every byte of a record header can change what recovery concludes,
// so they try each; a payload's bytes are all under the one checksum, so
// its first, its last and every payloadStride-th between stand for the
// rest, without hundreds of reopens more.
const payloadStride = 7

// recordPositions returns the offsets in [from, end) to damage in a record
// whose payload starts at payload: every header byte, and the payload's
// first and last bytes and every payloadStride-th between.
func recordPositions(from, end, payload int64) []int64 {
	var at []int64
	for p := from; p < end; p++ {
		if p < payload || p == payload || p == end-1 || (p-payload)%payloadStride == 0 {
			at = append(at, p)
		}
	}
	return at
}

func TestTornTailEveryCut(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		for _, rotateLast := range []bool{false, true} {
			name := map[bool]string{false: "same segment", true: "own segment"}[rotateLast]
			t.Run(name, func(t *testing.T) {
				const k = 6
				dir, recs, file, off := pristine(t, f, k, rotateLast)
				st, err := os.Stat(file)
				if err != nil {
					t.Fatal(err)
				}
				// Cut inside the header and inside the payload of the last record.
				for _, cut := range recordPositions(off+1, st.Size(), off+f.hdr()) {
					reopenAfterDamage(t, f, dir, file, func(b []byte) []byte { return b[:cut] }, recs[:k-1], off)
				}
			})
		}
	})
}

func TestTornTailEveryFlip(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		const k = 6
		dir, recs, file, off := pristine(t, f, k, false)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		last := recs[k-1].zxid
		for _, at := range recordPositions(off, st.Size(), off+f.hdr()) {
			for _, mask := range []byte{0x01, 0xff} {
				cut := reopenAfterDamage(t, f, dir, file, func(b []byte) []byte { b[at] ^= mask; return b }, recs[:k-1], off)
				// A flip outside the checked header bytes leaves the
				// header holding: the cut names the record it dropped.
				want := TailCut{Bytes: st.Size() - off, AfterZxid: recs[k-2].zxid, Damaged: true, Zxid: last, Mask: f.wantMask(last)}
				if at >= off+4 && at < off+f.hdr() {
					want.Zxid, want.Mask = 0, MaskAll
				}
				cut.Reason = ""
				if cut != want {
					t.Fatalf("flip at %d: Cut() = %+v, want %+v", at, cut, want)
				}
			}
		}
	})
}

func TestZeroFilledTail(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		const k = 6
		dir, recs, file, off := pristine(t, f, k, false)
		t.Run("zeros after the last record", func(t *testing.T) {
			st, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			zeros := func(b []byte) []byte { return append(b, make([]byte, 8192)...) }
			reopenAfterDamage(t, f, dir, file, zeros, recs, st.Size())
		})
		t.Run("last record zeroed", func(t *testing.T) {
			// The file size reached the disk but the last record's data did not.
			zeroed := func(b []byte) []byte {
				clear(b[off:])
				return append(b, make([]byte, 100)...)
			}
			reopenAfterDamage(t, f, dir, file, zeroed, recs[:k-1], off)
		})
		t.Run("partially zeroed", func(t *testing.T) {
			zeroed := func(b []byte) []byte { clear(b[off+f.hdr()+2:]); return b }
			reopenAfterDamage(t, f, dir, file, zeroed, recs[:k-1], off)
		})
	})
}

func TestGarbageTail(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		const k = 6
		dir, recs, file, _ := pristine(t, f, k, false)
		st, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		// Bytes that are no record at all after the last one.
		garbage := func(b []byte) []byte { return append(b, payloadFor(999, 5000)...) }
		reopenAfterDamage(t, f, dir, file, garbage, recs, st.Size())
	})
}

// TestCorruptionBeforeValidData flips every byte of every record but the
// last: a valid record follows, so the bad one may have been acknowledged.
// That is corruption, except under KeepDamaged for a version 2 record
// whose header still holds (the flip is in the record checksum or the
// payload): that record is kept in place, listed with its zxid and mask,
// and replayed as damaged between intact neighbours.
func TestCorruptionBeforeValidData(t *testing.T) {
	forFormats(t, func(t *testing.T, f format) {
		for _, keep := range []bool{false, true} {
			t.Run(fmt.Sprintf("KeepDamaged=%v", keep), func(t *testing.T) {
				const k = 6
				dir, recs, file, _ := pristine(t, f, k, false)
				offs := recordOffsets(t, file)
				for i, start := range offs[:len(offs)-1] {
					end := offs[i+1]
					for _, at := range recordPositions(start, end, start+f.hdr()) {
						cp := copyDir(t, dir)
						cpFile := filepath.Join(cp, filepath.Base(file))
						rewrite(t, cpFile, func(b []byte) []byte { b[at] ^= 0x40; return b })
						opts := f.opts(Options{NoSync: true})
						opts.KeepDamaged = keep
						headerHolds := at < start+4 || at >= start+f.hdr()
						if !(keep && f.tagged && headerHolds) {
							_, err := Open(cp, opts)
							wantCorrupt(t, err, cpFile, start, "follows")
							continue
						}
						l, _ := openT(t, cp, opts)
						wantKept(t, l, recs, i, cpFile, start)
						closeT(t, l)
					}
				}
			})
		}
	})
}

// wantCorruptOrKept opens dir, where recs[victim] at file and off has a
// damaged payload and valid records follow it: that is corruption, unless
// f keeps damaged records.
func wantCorruptOrKept(t *testing.T, f format, dir, file string, recs []rec, victim int, off int64) {
	t.Helper()
	if !f.keepDamaged {
		_, err := Open(dir, f.opts(Options{}))
		wantCorrupt(t, err, file, off, "follows")
		return
	}
	l, _ := openT(t, dir, f.opts(Options{}))
	defer closeT(t, l)
	wantKept(t, l, recs, victim, file, off)
}

// wantKept checks that the log holds recs with recs[victim], at file and
// off, kept in place as damaged: Damaged lists it, ReplayRecords hands it
// over without a payload between its intact neighbours, and Replay, which
// cannot hand it over, reports it as corruption.
func wantKept(t *testing.T, l *Log, recs []rec, victim int, file string, off int64) {
	t.Helper()
	z := recs[victim].zxid
	want := Record{Segment: file, Offset: off, Zxid: z, Mask: maskFor(z), Tagged: true, Damaged: true}
	if got := l.Damaged(); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("Damaged() = %+v, want [%+v]", got, want)
	}
	got := replayRecordsAll(t, l, 0)
	if len(got) != len(recs) {
		t.Fatalf("ReplayRecords handed over %d records, want %d", len(got), len(recs))
	}
	for i, r := range got {
		switch {
		case i == victim:
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("ReplayRecords handed over %+v, want %+v", r, want)
			}
		case r.Damaged || r.Zxid != recs[i].zxid || r.Mask != maskFor(r.Zxid) || !r.Tagged || string(r.Payload) != string(recs[i].payload):
			t.Fatalf("ReplayRecords record %d: %+v, want zxid %#x intact", i, r, recs[i].zxid)
		}
	}
	err := l.Replay(0, func(int64, []byte) error { return nil })
	wantCorrupt(t, err, file, off, "record checksum mismatch")
}

func TestCorruptionInOlderSegment(t *testing.T) {
	forFormats(t, func(t *testing.T, f format) {
		dir, _, file, _ := pristine(t, f, 6, true)
		paths := segmentPaths(t, dir)
		older := paths[len(paths)-2]
		if older == file {
			t.Fatal("want two segments")
		}
		offs := recordOffsets(t, older)
		last := offs[len(offs)-1]
		tests := []struct {
			name   string
			damage func([]byte) []byte
			off    int64
			reason string
		}{
			{"flip in last record", func(b []byte) []byte { b[last+f.hdr()] ^= 1; return b }, last, "not the newest"},
			{"cut inside last record", func(b []byte) []byte { return b[:last+3] }, last, "not the newest"},
			{"zero tail", func(b []byte) []byte { return append(b, 0, 0, 0, 0) }, int64(len(mustRead(t, older))), "not the newest"},
			{"header flip", func(b []byte) []byte { b[9] ^= 1; return b }, 0, "header checksum"},
			{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }, 0, "magic"},
			{"short header", func(b []byte) []byte { return b[:10] }, 0, "shorter than"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				cp := copyDir(t, dir)
				cpFile := filepath.Join(cp, filepath.Base(older))
				rewrite(t, cpFile, tt.damage)
				_, err := Open(cp, f.opts(Options{}))
				wantCorrupt(t, err, cpFile, tt.off, tt.reason)
			})
		}
	})
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// forge writes a segment file of format f following zxid prev with the
// given raw records.
func forge(t *testing.T, f format, dir string, prev int64, recs ...[]byte) string {
	t.Helper()
	h := segmentHeader{version: f.version(), prev: prev}
	b := h.encode()
	for _, r := range recs {
		b = append(b, r...)
	}
	path := filepath.Join(dir, segmentName(h.base()))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStructuralCorruption(t *testing.T) {
	forFormats(t, func(t *testing.T, f format) {
		p := []byte("payload")
		rl := f.hdr() + int64(len(p))
		tests := []struct {
			name string
			// build forges the directory and returns the file and offset the
			// error must name.
			build  func(t *testing.T, dir string) (string, int64)
			reason string
		}{
			{"zxid goes backwards", func(t *testing.T, dir string) (string, int64) {
				return forge(t, f, dir, 9, f.encode(10, p), f.encode(12, p), f.encode(11, p)), segmentHeaderSize + 2*rl
			}, "does not follow"},
			{"zxid repeats", func(t *testing.T, dir string) (string, int64) {
				return forge(t, f, dir, 9, f.encode(10, p), f.encode(10, p)), segmentHeaderSize + rl
			}, "does not follow"},
			{"first record not after the header's prev", func(t *testing.T, dir string) (string, int64) {
				return forge(t, f, dir, 10, f.encode(10, p)), segmentHeaderSize
			}, "does not follow"},
			{"name disagrees with header", func(t *testing.T, dir string) (string, int64) {
				forged := forge(t, f, dir, 9, f.encode(10, p))
				renamed := filepath.Join(dir, segmentName(9))
				if err := os.Rename(forged, renamed); err != nil {
					t.Fatal(err)
				}
				return renamed, 0
			}, "file name says"},
			{"missing middle segment", func(t *testing.T, dir string) (string, int64) {
				forge(t, f, dir, 0, f.encode(1, p), f.encode(2, p))
				// The segment holding 3 and 4 is missing: the next follows 4.
				return forge(t, f, dir, 4, f.encode(5, p)), 0
			}, "previous segment"},
			{"overlapping segments", func(t *testing.T, dir string) (string, int64) {
				forge(t, f, dir, 0, f.encode(1, p), f.encode(2, p), f.encode(3, p))
				return forge(t, f, dir, 2, f.encode(3, p)), 0
			}, "previous segment"},
			{"empty segment before another", func(t *testing.T, dir string) (string, int64) {
				forge(t, f, dir, 0)
				return forge(t, f, dir, 5, f.encode(6, p)), 0
			}, "previous segment"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				dir := t.TempDir()
				file, off := tt.build(t, dir)
				_, err := Open(dir, f.opts(Options{}))
				wantCorrupt(t, err, file, off, tt.reason)
			})
		}
	})
}

func TestCrashLeftovers(t *testing.T) {
	dir := t.TempDir()
	forge(t, formats[0], dir, 0, encodeRecord(1, []byte("a")), encodeRecord(2, []byte("b")))
	// A crash after creating the next segment, before its first record: the
	// empty segment stays and takes the next record.
	empty := forge(t, formats[0], dir, 2)
	// And one during the creation of another: the temporary file goes.
	tmp := filepath.Join(dir, segmentName(7<<32)+tempSuffix)
	if err := os.WriteFile(tmp, []byte("GWAL"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, logs := openT(t, dir, Options{})
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s survived Open", tmp)
	}
	if w := logs.warnings(); len(w) != 1 || w[0].attrs["file"] != tmp {
		t.Errorf("want one warning about %s, got %v", tmp, w)
	}
	if l.LastZxid() != 2 {
		t.Fatalf("LastZxid = %#x, want 2", l.LastZxid())
	}
	// The next zxid may jump an epoch.
	want := []rec{{1, []byte("a")}, {2, []byte("b")}, {1<<32 | 1, []byte("c")}}
	appendAll(t, l, want[2:])
	closeT(t, l)
	if got := segmentPaths(t, dir); len(got) != 2 || got[1] != empty {
		t.Fatalf("segments %v, want the record appended to %s", got, empty)
	}
	l, _ = openT(t, dir, Options{})
	defer closeT(t, l)
	checkRecs(t, replayAll(t, l, 0), want)
}

// TestTornTailScanIsLinear makes sure the search for valid records after a
// damaged one stays fast over a large garbage tail (it is linear: one
// 12-byte checksum per offset).
func TestTornTailScanIsLinear(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		dir, recs, file, off := pristine(t, f, 3, false)
		garbage := payloadFor(7, 8<<20)
		reopenAfterDamage(t, f, dir, file, func(b []byte) []byte {
			b[off+4] ^= 1 // the last record's length is bad: scan byte by byte
			return append(b, garbage...)
		}, recs[:2], off)
	})
}

// TestUnwrittenSector covers a power failure during an fsync where the disk
// persisted later sectors of the batch but not an earlier one: the record
// holding the never-written (zero) sector and everything after it were
// never acknowledged, so they are a torn tail even though valid records
// follow. A zero run that is not a whole aligned sector is not that, and is
// corruption.
func TestUnwrittenSector(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		dir := t.TempDir()
		l, _ := openT(t, dir, f.opts(Options{}))
		recs := make([]rec, 12)
		for i := range recs {
			z := int64(i + 1)
			recs[i] = rec{z, payloadFor(z, 700+i*37)}
		}
		appendAll(t, l, recs)
		closeT(t, l)
		file := segmentPaths(t, dir)[0]
		offs := recordOffsets(t, file)
		const victim = 5
		start, end := offs[victim], offs[victim+1]
		aligned := (start + sectorBytes - 1) / sectorBytes * sectorBytes

		t.Run("whole sector inside a record", func(t *testing.T) {
			if aligned+sectorBytes > end {
				t.Fatalf("record %d [%d,%d) holds no whole sector", victim, start, end)
			}
			reopenAfterDamage(t, f, dir, file, func(b []byte) []byte {
				clear(b[aligned : aligned+sectorBytes])
				return b
			}, recs[:victim], start)
		})
		t.Run("sector holding a record header", func(t *testing.T) {
			// Record 2 starts 10 bytes before a sector boundary, so losing that
			// sector damages its header, and its length is unknown.
			dir := t.TempDir()
			l, _ := openT(t, dir, f.opts(Options{}))
			recs := []rec{{1, payloadFor(1, 2*sectorBytes-segmentHeaderSize-int(f.hdr())-10)}, {2, payloadFor(2, 700)}, {3, payloadFor(3, 300)}}
			appendAll(t, l, recs)
			closeT(t, l)
			file := segmentPaths(t, dir)[0]
			offs := recordOffsets(t, file)
			if offs[1] != 2*sectorBytes-10 {
				t.Fatalf("record 2 at %d", offs[1])
			}
			reopenAfterDamage(t, f, dir, file, func(b []byte) []byte {
				clear(b[2*sectorBytes : 3*sectorBytes])
				return b
			}, recs[:1], offs[1])
		})
		t.Run("zero run shorter than a sector", func(t *testing.T) {
			cp := copyDir(t, dir)
			cpFile := filepath.Join(cp, filepath.Base(file))
			rewrite(t, cpFile, func(b []byte) []byte {
				clear(b[aligned : aligned+sectorBytes-1])
				return b
			})
			// No torn tail: damage to a record that may have been
			// acknowledged, which KeepDamaged keeps in place.
			wantCorruptOrKept(t, f, cp, cpFile, recs, victim, start)
		})
		t.Run("unaligned zero run", func(t *testing.T) {
			cp := copyDir(t, dir)
			cpFile := filepath.Join(cp, filepath.Base(file))
			rewrite(t, cpFile, func(b []byte) []byte {
				clear(b[aligned+1 : aligned+1+sectorBytes])
				return b
			})
			// No torn tail: damage to a record that may have been
			// acknowledged, which KeepDamaged keeps in place.
			wantCorruptOrKept(t, f, cp, cpFile, recs, victim, start)
		})
	})
}

// TestCutTellsDamageFromInterruption checks what Cut reports about a cut
// tail: a record whose write was interrupted (short, or ending in zeros)
// was never acknowledged; a whole record with a flipped bit may have been.
func TestCutTellsDamageFromInterruption(t *testing.T) {
	forTailFormats(t, func(t *testing.T, f format) {
		cases := []struct {
			name    string
			damage  func(b []byte, off int64) []byte
			damaged bool
			// headerHolds: the cut record's zxid and mask are known.
			headerHolds bool
		}{
			{"short payload", func(b []byte, off int64) []byte { return b[:len(b)-3] }, false, true},
			{"short header", func(b []byte, off int64) []byte { return b[:off+5] }, false, false},
			{"zero-filled", func(b []byte, off int64) []byte {
				clear(b[off:])
				return b
			}, false, false},
			{"bit flip in the payload", func(b []byte, off int64) []byte {
				b[len(b)-2] ^= 0x10
				return b
			}, true, true},
			{"bit flip in the header", func(b []byte, off int64) []byte {
				b[off+9] ^= 0x01
				return b
			}, true, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				dir, recs, file, off := pristine(t, f, 3, false)
				rewrite(t, file, func(b []byte) []byte { return c.damage(b, off) })
				l, _ := openT(t, dir, f.opts(Options{NoSync: true}))
				defer closeT(t, l)
				cut := l.Cut()
				if cut.Bytes == 0 || cut.AfterZxid != recs[1].zxid || cut.Damaged != c.damaged {
					t.Fatalf("Cut() = %+v, want bytes > 0 after %#x, damaged %v", cut, recs[1].zxid, c.damaged)
				}
				wantZ, wantMask := int64(0), MaskAll
				if c.headerHolds {
					wantZ, wantMask = recs[2].zxid, f.wantMask(recs[2].zxid)
				}
				if cut.Zxid != wantZ || cut.Mask != wantMask {
					t.Fatalf("Cut() = %+v, want the cut record's zxid %#x and mask %#x", cut, wantZ, wantMask)
				}
			})
		}
	})
}
