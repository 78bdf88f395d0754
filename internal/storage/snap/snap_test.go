package snap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// logRecorder is a slog.Handler that keeps warnings.
type logRecorder struct {
	mu    sync.Mutex
	warns []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Level < slog.LevelWarn {
		return nil
	}
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warns = append(r.warns, b.String())
	return nil
}

func (r *logRecorder) warnings() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.warns...)
}

func quiet() Option { return WithLogger(slog.New(slog.DiscardHandler)) }

// body returns deterministic snapshot content.
func body(seed, n int) []byte {
	b := make([]byte, n)
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x)
	}
	return b
}

func save(t *testing.T, dir string, zxid int64, data []byte) string {
	t.Helper()
	path, err := Save(dir, zxid, func(w io.Writer) error {
		// Several writes of odd sizes, as an encoder would do.
		for len(data) > 0 {
			n := min(len(data), 777)
			if _, err := w.Write(data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
		return nil
	}, quiet())
	if err != nil {
		t.Fatalf("Save(%#x): %v", zxid, err)
	}
	return path
}

// loaded is what LoadNewest returned and handed to read.
type loaded struct {
	zxid  int64
	found bool
	calls int
	data  []byte
}

func loadNewest(dir string, opts ...Option) (loaded, error) {
	var got loaded
	readZxid := int64(-1)
	z, found, err := LoadNewest(dir, func(z int64, r io.Reader) error {
		got.calls++
		readZxid = z
		b, err := io.ReadAll(r)
		got.data = b
		return err
	}, opts...)
	got.zxid, got.found = z, found
	if err == nil && found && readZxid != z {
		return got, fmt.Errorf("read got zxid %#x, LoadNewest returned %#x", readZxid, z)
	}
	return got, err
}

func TestSaveLoad(t *testing.T) {
	tests := []struct {
		name string
		zxid int64
		size int
	}{
		{"empty body at zxid 0", 0, 0},
		{"small", 1, 100},
		{"larger than the buffers", 5<<32 | 17, 3<<20 + 11},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := body(tt.size, tt.size)
			path := save(t, dir, tt.zxid, data)
			if want := filepath.Join(dir, fmt.Sprintf("snapshot.%016x", tt.zxid)); path != want {
				t.Fatalf("Save returned %s, want %s", path, want)
			}
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) != 1 {
				t.Fatalf("directory holds %v (%v), want only the snapshot", entries, err)
			}
			got, err := loadNewest(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !got.found || got.zxid != tt.zxid || got.calls != 1 || !bytes.Equal(got.data, data) {
				t.Fatalf("LoadNewest = zxid %#x found %v calls %d, %d bytes; want %#x, %d bytes",
					got.zxid, got.found, got.calls, len(got.data), tt.zxid, len(data))
			}
		})
	}
}

func TestLoadNewestPicksNewest(t *testing.T) {
	dir := t.TempDir()
	for _, z := range []int64{5, 1 << 32, 7} {
		save(t, dir, z, body(int(z), 50))
	}
	got, err := loadNewest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.zxid != 1<<32 || !bytes.Equal(got.data, body(1<<32, 50)) {
		t.Fatalf("loaded %#x, want %#x", got.zxid, int64(1)<<32)
	}
}

func TestLoadNothing(t *testing.T) {
	dir := t.TempDir()
	// Unrelated files are not snapshots.
	if err := os.WriteFile(filepath.Join(dir, "snapshot.notes"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		got, err := loadNewest(d)
		if err != nil || got.found || got.calls != 0 {
			t.Fatalf("LoadNewest(%s) = %+v, %v; want not found", d, got, err)
		}
	}
}

// damages are ways a snapshot file can be broken.
var damages = []struct {
	name string
	edit func([]byte) []byte
}{
	{"body byte flipped", func(b []byte) []byte { b[headerSize+len(b)/3] ^= 0x10; return b }},
	{"header zxid changed", func(b []byte) []byte { b[9] ^= 1; return b }},
	{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
	{"trailer checksum changed", func(b []byte) []byte { b[len(b)-5] ^= 1; return b }},
	{"trailer length changed", func(b []byte) []byte { b[len(b)-trailerSize] ^= 1; return b }},
	{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
	{"truncated to the header", func(b []byte) []byte { return b[:headerSize] }},
	{"empty file", func(b []byte) []byte { return nil }},
	{"bytes appended", func(b []byte) []byte { return append(b, 1, 2, 3) }},
	{"zero-filled", func(b []byte) []byte { clear(b); return b }},
}

func TestDamagedNewestFallsBack(t *testing.T) {
	for _, d := range damages {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			save(t, dir, 10, body(10, 4000))
			newest := save(t, dir, 20, body(20, 4000))
			rewriteFile(t, newest, d.edit)
			logs := &logRecorder{}
			got, err := loadNewest(dir, WithLogger(slog.New(logs)))
			if err != nil {
				t.Fatal(err)
			}
			if got.zxid != 10 || got.calls != 1 || !bytes.Equal(got.data, body(10, 4000)) {
				t.Fatalf("loaded %#x after %d calls, want the older snapshot 0xa", got.zxid, got.calls)
			}
			if w := logs.warnings(); len(w) != 1 || !strings.Contains(w[0], newest) {
				t.Fatalf("warnings %v, want one naming %s", w, newest)
			}
		})
	}
}

func TestNameMustMatchHeader(t *testing.T) {
	dir := t.TempDir()
	save(t, dir, 10, body(10, 100))
	p := save(t, dir, 20, body(20, 100))
	// A snapshot under another snapshot's name is not trusted.
	if err := os.Rename(p, filepath.Join(dir, fileName(30))); err != nil {
		t.Fatal(err)
	}
	got, err := loadNewest(dir, quiet())
	if err != nil || got.zxid != 10 {
		t.Fatalf("LoadNewest = %#x, %v; want 0xa", got.zxid, err)
	}
}

func TestAllDamaged(t *testing.T) {
	dir := t.TempDir()
	var paths []string
	for i, d := range damages[:3] {
		p := save(t, dir, int64(i+1), body(i, 1000))
		rewriteFile(t, p, d.edit)
		paths = append(paths, p)
	}
	got, err := loadNewest(dir, quiet())
	if !errors.Is(err, ErrNoValidSnapshot) {
		t.Fatalf("LoadNewest = %+v, %v; want ErrNoValidSnapshot", got, err)
	}
	if got.calls != 0 || got.found {
		t.Fatalf("read was called on a damaged snapshot")
	}
	for _, p := range paths {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not name %s", err, p)
		}
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	dir := t.TempDir()
	save(t, dir, 1, body(1, 100))
	save(t, dir, 2, body(2, 100))
	bad := errors.New("decoder says no")
	calls := 0
	_, _, err := LoadNewest(dir, func(int64, io.Reader) error { calls++; return bad }, quiet())
	if !errors.Is(err, bad) || calls != 1 {
		t.Fatalf("LoadNewest = %v after %d calls, want the decoder's error after 1 (no fallback)", err, calls)
	}
}

func TestReadMustConsumeBody(t *testing.T) {
	dir := t.TempDir()
	save(t, dir, 1, body(1, 10000))
	_, _, err := LoadNewest(dir, func(_ int64, r io.Reader) error {
		_, err := io.ReadFull(r, make([]byte, 5000))
		return err
	}, quiet())
	if err == nil || !strings.Contains(err.Error(), "left unread") {
		t.Fatalf("LoadNewest with a short read = %v, want an unread-bytes error", err)
	}
}

// TestChangedDuringRead damages the file after it was verified, while read
// runs: the second pass must notice.
func TestChangedDuringRead(t *testing.T) {
	dir := t.TempDir()
	p := save(t, dir, 1, body(1, 3<<20))
	_, _, err := LoadNewest(dir, func(_ int64, r io.Reader) error {
		rewriteFile(t, p, func(b []byte) []byte { b[len(b)-trailerSize-10] ^= 1; return b })
		_, err := io.Copy(io.Discard, r)
		return err
	}, quiet())
	if err == nil || !strings.Contains(err.Error(), "changed while being read") {
		t.Fatalf("LoadNewest = %v, want a second-pass checksum error", err)
	}
}

func TestSaveFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := errors.New("encoder failed")
	_, err := Save(dir, 1, func(w io.Writer) error {
		w.Write(body(1, 5000))
		return bad
	}, quiet())
	if !errors.Is(err, bad) {
		t.Fatalf("Save = %v, want the encoder's error", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("failed Save left %v", entries)
	}
	if _, err := Save(dir, -1, func(io.Writer) error { return nil }, quiet()); err == nil {
		t.Fatal("Save accepted a negative zxid")
	}
}

func TestSaveRemovesInterruptedSaves(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, fileName(3)+".12345"+tempSuffix)
	if err := os.WriteFile(tmp, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	// LoadNewest ignores it.
	if got, err := loadNewest(dir); err != nil || got.found {
		t.Fatalf("LoadNewest with only a temp file = %+v, %v", got, err)
	}
	save(t, dir, 4, body(4, 10))
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file survived Save: %v", err)
	}
}

// TestLargeSnapshot streams a snapshot bigger than any buffer through Save
// and LoadNewest without holding it in memory.
func TestLargeSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 64 MiB")
	}
	const size = 64 << 20
	chunk := body(9, 1<<20)
	dir := t.TempDir()
	var want uint32
	_, err := Save(dir, 9, func(w io.Writer) error {
		for range size / len(chunk) {
			if _, err := w.Write(chunk); err != nil {
				return err
			}
			want = crc32.Update(want, castagnoli, chunk)
		}
		return nil
	}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	var got uint32
	var n int64
	_, found, err := LoadNewest(dir, func(_ int64, r io.Reader) error {
		buf := make([]byte, 64<<10)
		for {
			k, err := r.Read(buf)
			got = crc32.Update(got, castagnoli, buf[:k])
			n += int64(k)
			if err == io.EOF {
				return nil
			}
			if err != nil {
				return err
			}
		}
	}, quiet())
	if err != nil || !found || n != size || got != want {
		t.Fatalf("LoadNewest: found %v, %d bytes, crc %x want %x, err %v", found, n, got, want, err)
	}
}

func rewriteFile(t *testing.T, path string, edit func([]byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(b), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestNewest: Newest names the file LoadNewest reads, skipping a damaged
// newer one, and says where its body lies; it finds nothing in an empty
// directory and fails as LoadNewest does when every file is damaged.
func TestNewest(t *testing.T) {
	dir := t.TempDir()
	if _, _, found, err := Newest(dir); found || err != nil {
		t.Fatalf("empty directory: found %v, %v", found, err)
	}
	older := save(t, dir, 10, body(10, 3000))
	newer := save(t, dir, 20, body(20, 3000))
	path, info, found, err := Newest(dir)
	if err != nil || !found || path != newer || info.Zxid != 20 {
		t.Fatalf("Newest = %s %+v %v %v; want %s", path, info, found, err, newer)
	}
	f, _ := os.ReadFile(newer)
	if !bytes.Equal(f[info.BodyOffset:info.BodyOffset+info.BodyBytes], body(20, 3000)) {
		t.Fatalf("body at %d+%d is not the body saved", info.BodyOffset, info.BodyBytes)
	}
	rewriteFile(t, newer, damages[0].edit)
	if path, _, _, err = Newest(dir); err != nil || path != older {
		t.Fatalf("with the newest damaged: %s, %v; want %s", path, err, older)
	}
	rewriteFile(t, older, damages[0].edit)
	if _, _, found, err = Newest(dir); found || !errors.Is(err, ErrNoValidSnapshot) {
		t.Fatalf("all damaged: found %v, %v", found, err)
	}
}

// TestReadNewestDamaged: the newest file whose framing holds but whose
// checksum fails is handed over whole; a valid newer snapshot, or none at
// all, means nothing to hand over; a file whose framing is broken is
// passed over for an older damaged one.
func TestReadNewestDamaged(t *testing.T) {
	read := func(dir string) (int64, []byte, bool) {
		t.Helper()
		var got []byte
		z, found, err := ReadNewestDamaged(dir, func(_ int64, r io.Reader) (err error) {
			got, err = io.ReadAll(r)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return z, got, found
	}
	dir := t.TempDir()
	if _, _, found := read(dir); found {
		t.Fatal("found a damaged snapshot in an empty directory")
	}
	older := save(t, dir, 0x10, body(1, 3000))
	if _, _, found := read(dir); found {
		t.Fatal("found a damaged snapshot where the newest is valid")
	}
	newer := save(t, dir, 0x20, body(2, 3000))
	b, err := os.ReadFile(newer)
	if err != nil {
		t.Fatal(err)
	}
	b[headerSize+100] ^= 1
	if err := os.WriteFile(newer, b, 0o600); err != nil {
		t.Fatal(err)
	}
	want := body(2, 3000)
	want[100] ^= 1
	if z, got, found := read(dir); !found || z != 0x20 || !bytes.Equal(got, want) {
		t.Fatalf("got zxid %#x found %v, body equal %v", z, found, bytes.Equal(got, want))
	}
	// The newest cut short (its framing broken), the older damaged.
	if err := os.WriteFile(newer, b[:len(b)-3], 0o600); err != nil {
		t.Fatal(err)
	}
	ob, err := os.ReadFile(older)
	if err != nil {
		t.Fatal(err)
	}
	ob[headerSize] ^= 1
	if err := os.WriteFile(older, ob, 0o600); err != nil {
		t.Fatal(err)
	}
	if z, _, found := read(dir); !found || z != 0x10 {
		t.Fatalf("got zxid %#x found %v, want the older damaged one", z, found)
	}
}
