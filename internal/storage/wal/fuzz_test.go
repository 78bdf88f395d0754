package wal

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzOpen feeds arbitrary bytes after a valid version 1 segment header to
// Open. It must never panic; when it accepts the segment, every record it
// kept must replay, and a second Open must find nothing more to repair.
func FuzzOpen(f *testing.F) {
	v1 := formats[0]
	f.Add(v1.encode(1, []byte("a")))
	f.Add(append(v1.encode(1, []byte("a")), v1.encode(2, nil)...))
	f.Add(append(v1.encode(1, []byte("abc")), 0, 0, 0))
	f.Add(append(v1.encode(3, make([]byte, 600)), v1.encode(4, []byte("x"))[:7]...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, tail []byte) { fuzzOpen(t, v1, tail) })
}

// FuzzOpenTagged is FuzzOpen for version 2, with and without KeepDamaged:
// a damaged record Open keeps must be listed by Damaged and replayed, in
// zxid order, as damaged.
func FuzzOpenTagged(f *testing.F) {
	v2 := formats[1]
	damaged := append(v2.encode(1, []byte("abc")), v2.encode(2, []byte("d"))...)
	damaged[recordHeaderSizeTagged] ^= 1
	f.Add(v2.encode(1, []byte("a")), false)
	f.Add(append(v2.encode(1, []byte("a")), v2.encode(2, nil)...), true)
	f.Add(append(v2.encode(1, []byte("abc")), 0, 0, 0), true)
	f.Add(append(v2.encode(3, make([]byte, 600)), v2.encode(4, []byte("x"))[:7]...), false)
	f.Add(damaged, true)
	f.Add(damaged, false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, true)
	f.Fuzz(func(t *testing.T, tail []byte, keep bool) {
		v2.keepDamaged = keep
		fuzzOpen(t, v2, tail)
	})
}

func fuzzOpen(t *testing.T, f format, tail []byte) {
	dir := t.TempDir()
	h := segmentHeader{version: f.version()}
	if err := os.WriteFile(filepath.Join(dir, segmentName(h.base())), append(h.encode(), tail...), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, f.opts(Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)}))
	if err != nil {
		var ce *CorruptError
		if !errors.As(err, &ce) {
			t.Fatalf("Open failed with a non-corruption error: %v", err)
		}
		return
	}
	var damaged []Record
	last := int64(0)
	if err := l.ReplayRecords(0, func(r Record) error {
		if r.Zxid <= last {
			t.Fatalf("replayed %d after %d", r.Zxid, last)
		}
		if r.Damaged {
			damaged = append(damaged, r)
		}
		last = r.Zxid
		return nil
	}); err != nil {
		t.Fatalf("ReplayRecords after a successful Open: %v", err)
	}
	if last != l.LastZxid() {
		t.Fatalf("replay ended at %d, LastZxid %d", last, l.LastZxid())
	}
	if got := l.Damaged(); !reflect.DeepEqual(got, damaged) || len(got) > 0 && !f.keepDamaged {
		t.Fatalf("Damaged() = %+v, ReplayRecords found %+v", got, damaged)
	}
	l.Close()
	logs := &logRecorder{}
	l, err = Open(dir, f.opts(Options{NoSync: true, Logger: slog.New(logs)}))
	if err != nil {
		t.Fatalf("second Open: %v", err)
	}
	defer l.Close()
	for _, w := range logs.warnings() {
		if strings.Contains(w.msg, "cutting") {
			t.Fatalf("second Open repaired again: %v", w)
		}
	}
	if got := l.Damaged(); len(got) != len(damaged) {
		t.Fatalf("second Open kept %d damaged records, the first %d", len(got), len(damaged))
	}
}

// FuzzRecordHeaderTagged decodes arbitrary bytes as a version 2 record
// header: whatever it accepts must encode back to the same bytes, so the
// decoder takes nothing the writer could not have written.
func FuzzRecordHeaderTagged(f *testing.F) {
	f.Add(formats[1].encode(7, []byte("payload"))[:recordHeaderSizeTagged])
	f.Add(make([]byte, recordHeaderSizeTagged))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) != recordHeaderSizeTagged {
			return
		}
		h, ok := decodeRecordHeader(b)
		if !ok {
			return
		}
		if h.zxid <= 0 || h.length > MaxPayloadBytes {
			t.Fatalf("accepted %+v", h)
		}
		again := make([]byte, recordHeaderSizeTagged)
		putRecordHeader(again, h.zxid, h.mask, make([]byte, h.length))
		// The record checksum covers the payload, which is not here.
		if !bytes.Equal(again[4:], b[4:]) {
			t.Fatalf("decoded %x as %+v, which encodes as %x", b, h, again)
		}
	})
}
