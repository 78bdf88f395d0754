package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestLockIsExclusive(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no advisory lock outside Unix")
	}
	path := filepath.Join(t.TempDir(), "lock")
	release, err := Lock(path)
	if err != nil {
		t.Fatal(err)
	}
	// flock conflicts between open file descriptions, even in one process.
	if _, err := Lock(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock = %v, want ErrLocked", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	release, err = Lock(path)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	release()
}

func TestMkdirAllAndSync(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := MkdirAll(dir, 0o750); err != nil {
		t.Fatalf("MkdirAll of an existing directory: %v", err)
	}
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("data"); err != nil {
		t.Fatal(err)
	}
	if err := SyncData(f); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatal(err)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SyncDir of a missing directory = %v", err)
	}
}
