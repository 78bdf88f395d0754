package fsutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveGradually(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "big")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: three steps without writing them.
	if err := f.Truncate(2*removeStep + 5); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := RemoveGradually(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("the file is still there: %v", err)
	}
	if err := RemoveGradually(p); err != nil {
		t.Fatalf("removing a file that is gone: %v", err)
	}
}

func TestRemoveTrashTakesOnlyTrash(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"log.1" + TrashSuffix, "log.2", "snapshot.3" + TrashSuffix} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	n, err := RemoveTrash(dir)
	if err != nil || n != 2 {
		t.Fatalf("RemoveTrash = %d, %v; want 2", n, err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 1 || left[0].Name() != "log.2" {
		t.Fatalf("left %v, want only log.2", left)
	}
	if n, err := RemoveTrash(filepath.Join(dir, "missing")); n != 0 || err != nil {
		t.Fatalf("a missing directory: %d, %v", n, err)
	}
}
