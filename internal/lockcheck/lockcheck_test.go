package lockcheck

import (
	"strings"
	"testing"
	"time"
)

// TestCheck feeds the checker hand-made histories, each correct or
// broken in one way, and checks it names exactly the broken property.
func TestCheck(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	hold := func(c string, shared bool, pos int64, req, acq, rel int) Hold {
		h := Hold{Client: c, Path: "/l", Shared: shared, Position: pos, Requested: at(req)}
		if acq >= 0 {
			h.Acquired = at(acq)
		}
		if rel >= 0 {
			h.Released = at(rel)
		}
		return h
	}
	crashed := func(h Hold) Hold { h.Crashed = true; return h }
	abandoned := func(h Hold) Hold { h.Abandoned = true; return h }
	otherPath := func(h Hold) Hold { h.Path = "/other"; return h }
	gen := func(h Hold, g int64) Hold { h.Generation = g; return h }
	X, S := false, true
	tests := []struct {
		name  string
		holds []Hold
		opts  Options
		want  []string // properties violated, in order
	}{
		{"sequential exclusive", []Hold{hold("a", X, 1, 0, 1, 5), hold("b", X, 2, 0, 5, 9)}, Options{FIFO: true}, nil},
		{"overlapping exclusive", []Hold{hold("a", X, 1, 0, 1, 5), hold("b", X, 2, 0, 4, 9)}, Options{}, []string{"mutual exclusion"}},
		{"readers overlap", []Hold{hold("a", S, 1, 0, 1, 5), hold("b", S, 2, 0, 2, 9)}, Options{FIFO: true}, nil},
		{"writer inside readers", []Hold{hold("a", S, 1, 0, 1, 5), hold("w", X, 2, 0, 3, 4)}, Options{}, []string{"mutual exclusion"}},
		{"reader inside writer", []Hold{hold("w", X, 1, 0, 1, 5), hold("r", S, 2, 0, 3, 4)}, Options{}, []string{"mutual exclusion"}},
		{"different paths may overlap", []Hold{hold("a", X, 1, 0, 1, 5), otherPath(hold("b", X, 2, 0, 2, 9))}, Options{}, nil},
		{"never released blocks later grants", []Hold{hold("a", X, 1, 0, 1, -1), hold("b", X, 2, 0, 50, 60)}, Options{}, []string{"liveness", "mutual exclusion"}},
		{"never granted", []Hold{hold("a", X, 1, 0, 1, 5), hold("b", X, 2, 0, -1, -1)}, Options{}, []string{"liveness"}},
		{"abandoned request", []Hold{hold("a", X, 1, 0, 1, 5), abandoned(hold("b", X, 2, 0, -1, -1))}, Options{}, nil},
		{"out of queue order", []Hold{hold("a", X, 2, 0, 1, 5), hold("b", X, 1, 0, 6, 9)}, Options{FIFO: true}, []string{"fifo"}},
		{"out of order without FIFO", []Hold{hold("a", X, 2, 0, 1, 5), hold("b", X, 1, 0, 6, 9)}, Options{}, nil},
		{"readers may pass each other", []Hold{hold("a", S, 2, 0, 1, 5), hold("b", S, 1, 0, 2, 9)}, Options{FIFO: true}, nil},
		{"reader passes earlier writer", []Hold{hold("r", S, 2, 0, 1, 5), hold("w", X, 1, 0, 6, 9)}, Options{FIFO: true}, []string{"fifo"}},
		{"lock-delay honored", []Hold{crashed(hold("a", X, 1, 0, 1, 5)), hold("b", X, 2, 0, 105, 110)}, Options{LockDelay: 100 * time.Millisecond}, nil},
		{"lock-delay broken", []Hold{crashed(hold("a", X, 1, 0, 1, 5)), hold("b", X, 2, 0, 50, 60)}, Options{LockDelay: 100 * time.Millisecond}, []string{"lock-delay"}},
		{"clean release has no delay", []Hold{hold("a", X, 1, 0, 1, 5), hold("b", X, 2, 0, 6, 9)}, Options{LockDelay: 100 * time.Millisecond}, nil},
		{"generations increase", []Hold{gen(hold("a", X, 1, 0, 1, 5), 3), gen(hold("b", X, 2, 0, 6, 9), 7)}, Options{Generations: true}, nil},
		{"generation goes back", []Hold{gen(hold("a", X, 1, 0, 1, 5), 7), gen(hold("b", X, 2, 0, 6, 9), 7)}, Options{Generations: true}, []string{"generation"}},
		{"generation missing", []Hold{hold("a", X, 1, 0, 1, 5)}, Options{Generations: true}, []string{"generation"}},
		{"acquired before requested", []Hold{hold("a", X, 1, 5, 1, 6)}, Options{}, []string{"well-formed"}},
		{"released before acquired", []Hold{hold("a", X, 1, 0, 5, 2)}, Options{}, []string{"well-formed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.holds, tc.opts)
			var props []string
			for _, v := range got {
				props = append(props, v.Property)
			}
			if strings.Join(props, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("violations %v, want properties %v", got, tc.want)
			}
		})
	}
}

// TestCheckFindsBrokenLock runs contenders with a "lock" that
// excludes nothing: the checker must catch the overlaps. This guards the
// contention tests against a checker that passes everything.
func TestCheckFindsBrokenLock(t *testing.T) {
	var hist History
	start := time.Now()
	done := make(chan struct{})
	for i := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 5 {
				h := Hold{Client: string(rune('a' + i)), Path: "/l", Position: NoPosition, Requested: time.Now()}
				h.Acquired = time.Now()
				time.Sleep(2 * time.Millisecond)
				h.Released = time.Now()
				hist.Add(h)
			}
		}()
	}
	for range 8 {
		<-done
	}
	v := Check(hist.Holds(), Options{})
	if len(v) == 0 || v[0].Property != "mutual exclusion" {
		t.Fatalf("no overlap found in %d concurrent holds over %v: %v", len(hist.Holds()), time.Since(start), v)
	}
}
