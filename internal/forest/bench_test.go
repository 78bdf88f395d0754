package forest

import (
	"math/rand/v2"
	"testing"
)

// The benchmarks measure one join and one departure on a forest of 1,000
// servers for each configuration of the paper (go test -bench . ./internal/forest).
// Each iteration is a join followed by a departure of a random server, so the
// forest stays at 1,000 servers; only the measured half is timed.

func benchForest(b *testing.B, cfg Config) (*Forest, *rand.Rand) {
	f, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for id := ServerID(1); id <= 1000; id++ {
		if _, err := f.Join(id, ""); err != nil {
			b.Fatal(err)
		}
	}
	return f, rand.New(rand.NewPCG(1, 2))
}

func BenchmarkJoin1000(b *testing.B) {
	for _, sh := range paperShapes {
		b.Run(sh.cfg.String(), func(b *testing.B) {
			f, rng := benchForest(b, sh.cfg)
			ids := f.Servers()
			for b.Loop() {
				b.StopTimer()
				i := rng.IntN(len(ids))
				if _, err := f.Leave(ids[i]); err != nil {
					b.Fatal(err)
				}
				ids[i] += 1000000 // rejoins under a fresh id
				b.StartTimer()
				if _, err := f.Join(ids[i], ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLeave1000(b *testing.B) {
	for _, sh := range paperShapes {
		b.Run(sh.cfg.String(), func(b *testing.B) {
			f, rng := benchForest(b, sh.cfg)
			ids := f.Servers()
			for b.Loop() {
				b.StopTimer()
				i := rng.IntN(len(ids))
				b.StartTimer()
				if _, err := f.Leave(ids[i]); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				ids[i] += 1000000
				if _, err := f.Join(ids[i], ""); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
