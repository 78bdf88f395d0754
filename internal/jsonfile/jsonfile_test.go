package jsonfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteThenRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	type rec struct{ A int }
	if err := Write(path, rec{A: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left behind: %v", err)
	}
	var got rec
	if err := Read(path, &got); err != nil || got.A != 7 {
		t.Fatalf("read %+v, %v", got, err)
	}
	if err := Read(filepath.Join(t.TempDir(), "none"), &got); !os.IsNotExist(err) {
		t.Fatalf("missing file: %v", err)
	}
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Read(path, &got); err == nil {
		t.Fatal("a broken record was read")
	}
}

func TestWriteSyncedThenRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rec")
	if err := WriteSynced(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	var got map[string]int
	if err := Read(p, &got); err != nil || got["a"] != 1 {
		t.Fatalf("read %v, %v", got, err)
	}
	if _, err := os.Stat(p + ".tmp"); !os.IsNotExist(err) {
		t.Fatalf("temporary file left: %v", err)
	}
}
