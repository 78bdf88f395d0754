package bench

import (
	"testing"
	"time"
)

func TestMaxGapAfter(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []time.Time{at(-50), at(-10), at(5), at(15), at(140), at(150)}
	if got := maxGapAfter(ts, t0, at(200)); got != 125 {
		t.Fatalf("gap %v ms, want 125 (from 15 to 140)", got)
	}
	if got := maxGapAfter(ts, t0, at(400)); got != 250 {
		t.Fatalf("gap %v ms, want 250 (from the last write to the end)", got)
	}
	if got := maxGapAfter(nil, t0, at(300)); got != 300 {
		t.Fatalf("gap %v ms with no write, want the whole window", got)
	}
}
