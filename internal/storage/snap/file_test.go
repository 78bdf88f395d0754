package snap

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestEncodeIsSaveBytes checks that a streamed snapshot is byte for byte
// the file Save writes, and that Receive stores it whole and described.
func TestEncodeIsSaveBytes(t *testing.T) {
	dir := t.TempDir()
	b := body(7, 100_000)
	write := func(w io.Writer) error { _, err := w.Write(b); return err }
	saved, err := Save(dir, 0x500000002, write, quiet())
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	n, err := Encode(&stream, 0x500000002, write)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(saved)
	if !bytes.Equal(stream.Bytes(), want) || n != int64(len(want)) {
		t.Fatalf("Encode wrote %d bytes unlike Save's %d-byte file", n, len(want))
	}
	out := filepath.Join(t.TempDir(), "backup.snap")
	var seen []byte
	info, err := Receive(out, bytes.NewReader(stream.Bytes()), func(zxid int64, r io.Reader) error {
		if zxid != 0x500000002 {
			t.Errorf("check saw zxid %#x", zxid)
		}
		seen, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(seen, b) {
		t.Fatal("check did not see the body")
	}
	got := Info{Zxid: 0x500000002, Version: 1, Size: int64(len(want)), BodyOffset: headerSize, BodyBytes: int64(len(b)), Checksum: info.Checksum}
	if info != got {
		t.Fatalf("Receive = %+v, want %+v", info, got)
	}
	if again, err := Inspect(out); err != nil || again != info {
		t.Fatalf("Inspect = %+v, %v; want %+v", again, err, info)
	}
	if _, err := ReadFile(out, func(int64, io.Reader) error { return nil }); err == nil {
		t.Fatal("ReadFile accepted a reader that left the body unread")
	}
}

// TestReceiveRefusesDamage checks that a damaged or refused stream leaves
// the file it would replace as it was and no temporary file behind.
func TestReceiveRefusesDamage(t *testing.T) {
	var stream bytes.Buffer
	if _, err := Encode(&stream, 9, func(w io.Writer) error { _, err := w.Write(body(1, 5000)); return err }); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "backup.snap")
	if err := os.WriteFile(out, []byte("the old backup"), 0o600); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(stream.Bytes())
	flipped[headerSize+100] ^= 0x10
	refused := errors.New("refused")
	for name, tc := range map[string]struct {
		in    []byte
		check func(int64, io.Reader) error
	}{
		"flipped":   {flipped, nil},
		"truncated": {stream.Bytes()[:stream.Len()-1], nil},
		"refused":   {stream.Bytes(), func(int64, io.Reader) error { return refused }},
	} {
		if _, err := Receive(out, bytes.NewReader(tc.in), tc.check); err == nil {
			t.Errorf("%s: Receive accepted it", name)
		}
		if b, _ := os.ReadFile(out); string(b) != "the old backup" {
			t.Errorf("%s: the old file was replaced", name)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("%s: %d files left in the directory", name, len(entries))
		}
	}
	if _, err := Inspect(out); err == nil {
		t.Error("Inspect accepted a file that is not a snapshot")
	}
}
