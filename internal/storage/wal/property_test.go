package wal

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRandomOperations drives a Log with random appends, syncs, truncations,
// purges and reopens over tiny segments, and checks it against a model that
// is a plain slice of records and the mask each should read back with.
// Runs write format version 1, version 2, or switch between the two at
// reopens, so the log mixes segments of both.
func TestRandomOperations(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	for run := range 9 {
		dir := t.TempDir()
		// Every other run with fsync on, so the paths that sync are driven too.
		opts := Options{SegmentBytes: int64(64 + rng.IntN(2048)), NoSync: run%2 == 0, Tagged: run%3 == 1, KeepDamaged: rng.IntN(2) == 0}
		mixed := run%3 == 2
		l, _ := openT(t, dir, opts)
		var model []rec
		// masks holds the mask each record of the model reads back with.
		masks := map[int64]uint64{}
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
					mask := MaskAll
					var err error
					if rng.IntN(4) == 0 {
						err = l.Append(r.zxid, r.payload)
					} else {
						err = l.AppendTagged(r.zxid, maskFor(z), r.payload)
						if opts.Tagged {
							mask = maskFor(z)
						}
					}
					if err != nil {
						t.Fatalf("run %d step %d: Append: %v", run, step, err)
					}
					model = append(model, r)
					masks[z] = mask
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
				if mixed {
					opts.Tagged = rng.IntN(2) == 0
				}
				var logs *logRecorder
				l, logs = openT(t, dir, opts)
				if w := logs.warnings(); len(w) != 0 {
					t.Fatalf("run %d step %d: reopen warned: %v", run, step, w)
				}
			}
			checkModel(t, l, model, masks, purgedUpTo, rng)
		}
		closeT(t, l)
	}
}

// checkModel compares the log with the model: replays from the purge point
// or later are complete and every record has its mask, replays from
// earlier are either complete or refused with ErrPurged, never short.
func checkModel(t *testing.T, l *Log, model []rec, masks map[int64]uint64, purgedUpTo int64, rng *rand.Rand) {
	t.Helper()
	from := purgedUpTo
	if len(model) > 0 && rng.IntN(2) == 0 {
		from = max(from, model[rng.IntN(len(model))].zxid)
	}
	var got []rec
	for _, r := range replayRecordsAll(t, l, from) {
		if r.Mask != masks[r.Zxid] || r.Damaged || r.Mask != MaskAll && !r.Tagged {
			t.Fatalf("ReplayRecords: %#x has mask %#x (tagged %v, damaged %v), want %#x", r.Zxid, r.Mask, r.Tagged, r.Damaged, masks[r.Zxid])
		}
		got = append(got, rec{r.Zxid, r.Payload})
	}
	checkRecs(t, got, after(model, from))
	got = nil
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
