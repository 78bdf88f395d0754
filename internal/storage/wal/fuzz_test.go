package wal

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes after a valid segment header to Open. It
// must never panic; when it accepts the segment, every record it kept must
// replay, and a second Open must find nothing more to repair.
func FuzzOpen(f *testing.F) {
	f.Add(encodeRecord(1, []byte("a")))
	f.Add(append(encodeRecord(1, []byte("a")), encodeRecord(2, nil)...))
	f.Add(append(encodeRecord(1, []byte("abc")), 0, 0, 0))
	f.Add(append(encodeRecord(3, make([]byte, 600)), encodeRecord(4, []byte("x"))[:7]...))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, tail []byte) {
		dir := t.TempDir()
		h := segmentHeader{}
		if err := os.WriteFile(filepath.Join(dir, segmentName(h.base())), append(h.encode(), tail...), 0o600); err != nil {
			t.Fatal(err)
		}
		opts := Options{NoSync: true, Logger: slog.New(slog.DiscardHandler)}
		l, err := Open(dir, opts)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open failed with a non-corruption error: %v", err)
			}
			return
		}
		var n int
		last := int64(0)
		if err := l.Replay(0, func(z int64, _ []byte) error {
			if z <= last {
				t.Fatalf("replayed %d after %d", z, last)
			}
			last = z
			n++
			return nil
		}); err != nil {
			t.Fatalf("Replay after a successful Open: %v", err)
		}
		if last != l.LastZxid() {
			t.Fatalf("replay ended at %d, LastZxid %d", last, l.LastZxid())
		}
		l.Close()
		logs := &logRecorder{}
		l, err = Open(dir, Options{NoSync: true, Logger: slog.New(logs)})
		if err != nil {
			t.Fatalf("second Open: %v", err)
		}
		defer l.Close()
		if w := logs.warnings(); len(w) != 0 {
			t.Fatalf("second Open repaired again: %v", w)
		}
	})
}
