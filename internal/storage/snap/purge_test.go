package snap

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// fill writes records 1..n into a log with small segments in dir and
// returns the open log.
func fill(t *testing.T, dir string, n int) *wal.Log {
	t.Helper()
	l, err := wal.Open(dir, wal.Options{SegmentBytes: 1024, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for z := int64(1); z <= int64(n); z++ {
		if err := l.Append(z, body(int(z), 100)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Sync(); err != nil {
		t.Fatal(err)
	}
	return l
}

func snapshotZxids(t *testing.T, dir string) []int64 {
	t.Helper()
	snaps, err := list(dir)
	if err != nil {
		t.Fatal(err)
	}
	var z []int64
	for _, s := range snaps {
		z = append(z, s.zxid)
	}
	return z
}

// replayable reports whether the log can replay everything after zxid, and
// the first zxid it would replay.
func replayable(t *testing.T, l *wal.Log, zxid int64) (bool, int64) {
	t.Helper()
	first := int64(0)
	err := l.Replay(zxid, func(z int64, _ []byte) error {
		if first == 0 {
			first = z
		}
		return nil
	})
	if errors.Is(err, wal.ErrPurged) {
		return false, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return true, first
}

func TestPurge(t *testing.T) {
	for _, open := range []bool{true, false} {
		name := map[bool]string{true: "log open", false: "log closed"}[open]
		t.Run(name, func(t *testing.T) {
			snapDir, logDir := t.TempDir(), t.TempDir()
			l := fill(t, logDir, 300)
			zxids := []int64{40, 90, 150, 210, 260}
			for _, z := range zxids {
				save(t, snapDir, z, body(int(z), 200))
			}
			segsBefore, _ := filepath.Glob(filepath.Join(logDir, "log.*"))
			if !open {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := Purge(snapDir, logDir, 3, quiet()); err != nil {
				t.Fatal(err)
			}
			if got := snapshotZxids(t, snapDir); len(got) != 3 || got[0] != 150 || got[2] != 260 {
				t.Fatalf("kept snapshots %v, want [150 210 260]", got)
			}
			segsAfter, _ := filepath.Glob(filepath.Join(logDir, "log.*"))
			if len(segsAfter) >= len(segsBefore) {
				t.Fatalf("no log segment purged: %d before, %d after", len(segsBefore), len(segsAfter))
			}
			for _, d := range []string{snapDir, logDir} {
				if trash, _ := filepath.Glob(filepath.Join(d, "*"+fsutil.TrashSuffix)); len(trash) != 0 {
					t.Fatalf("purge left %v", trash)
				}
			}
			if !open {
				var err error
				l, err = wal.Open(logDir, wal.Options{SegmentBytes: 1024, Logger: slog.New(slog.DiscardHandler)})
				if err != nil {
					t.Fatal(err)
				}
			}
			defer l.Close()
			// Recovery from the oldest kept snapshot still works; from the
			// purged ones it is refused rather than silently short.
			if ok, first := replayable(t, l, 150); !ok || first != 151 {
				t.Fatalf("replay from the oldest kept snapshot: ok %v, first zxid %d", ok, first)
			}
			if ok, _ := replayable(t, l, 40); ok {
				t.Fatal("log still replays from a purged snapshot: nothing was purged that could be")
			}
			got, err := loadNewest(snapDir)
			if err != nil || got.zxid != 260 {
				t.Fatalf("LoadNewest after purge = %#x, %v", got.zxid, err)
			}
		})
	}
}

// TestPurgeFinishesAnInterruptedOne: a purge that a crash stopped after
// renaming files aside left them behind; loading ignores them, and the
// next purge deletes them.
func TestPurgeFinishesAnInterruptedOne(t *testing.T) {
	snapDir, logDir := t.TempDir(), t.TempDir()
	fill(t, logDir, 50).Close()
	save(t, snapDir, 30, body(30, 200))
	old := save(t, snapDir, 20, body(20, 200))
	if err := os.Rename(old, old+fsutil.TrashSuffix); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(logDir, "log.*"))
	if err := os.Rename(segs[0], segs[0]+fsutil.TrashSuffix); err != nil {
		t.Fatal(err)
	}
	if got := snapshotZxids(t, snapDir); len(got) != 1 || got[0] != 30 {
		t.Fatalf("snapshots listed %v, want [30]", got)
	}
	if err := Purge(snapDir, logDir, MinRetain, quiet()); err != nil {
		t.Fatal(err)
	}
	if trash, _ := filepath.Glob(filepath.Join(snapDir, "*"+fsutil.TrashSuffix)); len(trash) != 0 {
		t.Fatalf("left %v", trash)
	}
}

func TestPurgeKeepsEverythingBelowRetain(t *testing.T) {
	snapDir, logDir := t.TempDir(), t.TempDir()
	l := fill(t, logDir, 100)
	defer l.Close()
	save(t, snapDir, 50, body(1, 10))
	save(t, snapDir, 80, body(2, 10))
	segs, _ := filepath.Glob(filepath.Join(logDir, "log.*"))
	if err := Purge(snapDir, logDir, 3, quiet()); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join(logDir, "log.*"))
	if got := snapshotZxids(t, snapDir); len(got) != 2 || len(after) != len(segs) {
		t.Fatalf("Purge with 2 snapshots and retain 3 deleted files: snapshots %v, segments %d -> %d", got, len(segs), len(after))
	}
}

func TestPurgeRetainMinimum(t *testing.T) {
	snapDir := t.TempDir()
	for z := int64(1); z <= 5; z++ {
		save(t, snapDir, z, body(int(z), 10))
	}
	for _, retain := range []int{-1, 0, 1, 2} {
		if err := Purge(snapDir, t.TempDir(), retain, quiet()); err == nil {
			t.Errorf("Purge with retain %d succeeded", retain)
		}
	}
	if got := snapshotZxids(t, snapDir); len(got) != 5 {
		t.Fatalf("a refused Purge deleted snapshots: %v", got)
	}
	// A log directory that does not exist is fine: there is nothing to purge.
	if err := Purge(snapDir, filepath.Join(t.TempDir(), "none"), 4, quiet()); err != nil {
		t.Fatal(err)
	}
	if got := snapshotZxids(t, snapDir); len(got) != 4 || got[0] != 2 {
		t.Fatalf("kept %v, want the newest 4", got)
	}
	if _, err := os.Stat(filepath.Join(snapDir, fileName(1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("oldest snapshot survived")
	}
}
