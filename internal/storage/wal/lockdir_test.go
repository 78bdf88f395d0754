package wal

import (
	"errors"
	"log/slog"
	"testing"
)

// TestLockDir: LockDir fails while a Log is open on the directory and
// while another LockDir holds it, and keeps Open out until released.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l, _ := openT(t, dir, Options{})
	if _, err := LockDir(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("LockDir with the log open: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	release, err := LockDir(dir)
	if err != nil {
		t.Fatalf("LockDir after Close: %v", err)
	}
	// A second lock is refused by the flock itself: nothing is open in
	// the registry.
	if _, err := LockDir(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("a second LockDir: %v", err)
	}
	if _, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)}); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open under LockDir: %v", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	l, _ = openT(t, dir, Options{})
	l.Close()
}
