package wal

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRandomOperations drives a Log with random appends, syncs, truncations,
// purges and reopens over tiny segments, and checks it against a model that
// is a plain slice of records.
func TestRandomOperations(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for run := range 8 {
		dir := t.TempDir()
		// Every other run with fsync on, so the paths that sync are driven too.
		opts := Options{SegmentBytes: int64(64 + rng.IntN(2048)), NoSync: run%2 == 0}
		l, _ := openT(t, dir, opts)
		var model []rec
		// purgedUpTo is the highest zxid passed to PurgeBefore: replays
		// from there on must be complete.
		var purgedUpTo int64
		last := func() int64 {
			if len(model) == 0 {
				return 0
			}
			return model[len(model)-1].zxid
		}
		for step := range 300 {
			switch op := rng.IntN(100); {
			case op < 50: // append a batch, sometimes jumping an epoch
				for range 1 + rng.IntN(10) {
					z := last() + 1
					if rng.IntN(20) == 0 {
						z = (z>>32 + 1) << 32
					}
					r := rec{z, payloadFor(z, rng.IntN(300))}
					if err := l.Append(r.zxid, r.payload); err != nil {
						t.Fatalf("run %d step %d: Append: %v", run, step, err)
					}
					model = append(model, r)
				}
			case op < 60:
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
			case op < 72: // truncate at or after a record, or between two
				if len(model) == 0 {
					continue
				}
				i := rng.IntN(len(model))
				z := model[i].zxid - int64(rng.IntN(2))
				err := l.TruncateAfter(z)
				if errors.Is(err, ErrPurged) && z < purgedUpTo {
					continue // below the purge point: refused, nothing changed
				}
				if err != nil {
					t.Fatalf("run %d step %d: TruncateAfter(%#x): %v", run, step, z, err)
				}
				for len(model) > 0 && model[len(model)-1].zxid > z {
					model = model[:len(model)-1]
				}
			case op < 80:
				if len(model) == 0 {
					continue
				}
				z := model[rng.IntN(len(model))].zxid
				if _, err := l.PurgeBefore(z); err != nil {
					t.Fatal(err)
				}
				purgedUpTo = max(purgedUpTo, z)
			default:
				closeT(t, l)
				var logs *logRecorder
				l, logs = openT(t, dir, opts)
				if w := logs.warnings(); len(w) != 0 {
					t.Fatalf("run %d step %d: reopen warned: %v", run, step, w)
				}
			}
			checkModel(t, l, model, purgedUpTo, rng)
		}
		closeT(t, l)
	}
}

// checkModel compares the log with the model: replays from the purge point
// or later are complete, replays from earlier are either complete or
// refused with ErrPurged, never short.
func checkModel(t *testing.T, l *Log, model []rec, purgedUpTo int64, rng *rand.Rand) {
	t.Helper()
	from := purgedUpTo
	if len(model) > 0 && rng.IntN(2) == 0 {
		from = max(from, model[rng.IntN(len(model))].zxid)
	}
	checkRecs(t, replayAll(t, l, from), after(model, from))
	var got []rec
	err := l.Replay(0, func(z int64, p []byte) error { got = append(got, rec{z, p}); return nil })
	switch {
	case errors.Is(err, ErrPurged) && purgedUpTo > 0:
	case err != nil:
		t.Fatalf("Replay(0): %v", err)
	default:
		checkRecs(t, got, after(model, 0))
	}
	wantLast := int64(0)
	if len(model) > 0 {
		wantLast = model[len(model)-1].zxid
	}
	if got := l.LastZxid(); got != wantLast {
		t.Fatalf("LastZxid = %#x, want %#x", got, wantLast)
	}
}

func after(model []rec, z int64) []rec {
	for i, r := range model {
		if r.zxid > z {
			return model[i:]
		}
	}
	return nil
}
