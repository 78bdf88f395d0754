package gcheadroom

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPercent(t *testing.T) {
	const mb = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		max, want      int
	}{
		{100 * mb, 256 * mb, 100, 100}, // a small heap keeps the process's GOGC
		{256 * mb, 256 * mb, 100, 100},
		{512 * mb, 256 * mb, 100, 50},
		{1280 * mb, 256 * mb, 100, 20},
		{10240 * mb, 256 * mb, 100, MinPercent}, // never below MinPercent
		{1280 * mb, 256 * mb, 15, 15},           // nor above the process's own
		{0, 256 * mb, 100, 100},                 // nothing measured yet
		{1280 * mb, 0, 100, 100},                // turned off
	} {
		if got := Percent(c.live, c.headroom, c.max); got != c.want {
			t.Errorf("Percent(%d MiB live, %d MiB headroom, max %d) = %d, want %d",
				c.live/mb, c.headroom/mb, c.max, got, c.want)
		}
	}
}

// TestAdjustFollowsTheLiveHeap keeps 64 MiB live and asks for 8 MiB of
// headroom: GOGC goes to 12; once the data is gone it comes back.
func TestAdjustFollowsTheLiveHeap(t *testing.T) {
	base := debug.SetGCPercent(100)
	defer debug.SetGCPercent(base)
	live := make([][]byte, 64)
	for i := range live {
		live[i] = make([]byte, 1<<20)
	}
	runtime.GC()
	set := adjust(8<<20, 100, 100)
	if set < 11 || set > 13 {
		t.Fatalf("GOGC %d with 64 MiB live and 8 MiB of headroom, want about 12", set)
	}
	if got := debug.SetGCPercent(set); got != set {
		t.Fatalf("adjust returned %d but set %d", set, got)
	}
	runtime.KeepAlive(live)
	live = nil
	runtime.GC()
	if set = adjust(8<<20, 100, set); set != 100 {
		t.Fatalf("GOGC %d after the data went, want 100", set)
	}
}
