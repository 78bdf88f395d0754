package forest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Resilience (the Giraffe paper, §III-A): a message sent down all t trees reaches every
// live server when any t-1 servers have crashed and nothing has been
// repaired, while the forest is disjoint. Beyond disjointness (with t <= c)
// the construction keeps every server interior in at most two trees, which
// guarantees floor((t-1)/2) crashes; below t servers every server is the root
// of its own tree and receives its own copy whatever else crashed.

// guaranteedCrashes returns how many crashed servers an n-server forest of
// shape cfg survives by construction.
func guaranteedCrashes(cfg Config, n int) int {
	switch {
	case n <= 1:
		return 0
	case n < cfg.Trees:
		return n - 1
	case cfg.Disjoint(n):
		return cfg.Trees - 1
	default:
		return (cfg.Trees - 1) / 2
	}
}

// checkReach fails the test unless a dissemination with the given servers
// crashed reaches exactly the live ones.
func checkReach(t *testing.T, f *Forest, crashed []ServerID) bool {
	t.Helper()
	dead := make(map[ServerID]bool, len(crashed))
	for _, id := range crashed {
		dead[id] = true
	}
	got := reach(f, func(id ServerID) bool { return dead[id] })
	var live []ServerID
	for _, id := range f.Servers() {
		if !dead[id] {
			live = append(live, id)
		}
	}
	return slices.Equal(got, live)
}

// subsets calls fn with every size-k subset of ids (reusing one slice).
func subsets(ids []ServerID, k int, fn func([]ServerID)) {
	pick := make([]ServerID, 0, k)
	var rec func(start int)
	rec = func(start int) {
		if len(pick) == k {
			fn(pick)
			return
		}
		for i := start; i <= len(ids)-(k-len(pick)); i++ {
			pick = append(pick, ids[i])
			rec(i + 1)
			pick = pick[:len(pick)-1]
		}
	}
	rec(0)
}

// forestsOfSize returns a few forests of n servers of shape cfg: n plain
// joins, and random histories (with departures) that end at n servers.
func forestsOfSize(t *testing.T, cfg Config, n int, histories int, seed uint64) []*Forest {
	fs := []*Forest{grow(t, cfg, n)}
	for h := range histories {
		f := mustNew(t, cfg)
		hist := newHistory(seed+uint64(h), n+n/2+1, false)
		for range 4 * n {
			if _, err := f.Apply(hist.step(f)); err != nil {
				t.Fatal(err)
			}
		}
		for f.Len() < n {
			hist.next++
			mustJoin(t, f, hist.next+10000)
		}
		for f.Len() > n {
			mustLeave(t, f, f.Servers()[hist.rng.IntN(f.Len())])
		}
		fs = append(fs, f)
	}
	return fs
}

func TestResilienceExhaustiveSmall(t *testing.T) {
	maxN := map[string]int{"classic 1-999": 30, "3-3": 30, "3-5": 30, "5-10": 18, "9-9": 14}
	if testing.Short() {
		for k := range maxN {
			maxN[k] = maxN[k] * 2 / 3
		}
	}
	for si, sh := range paperShapes {
		t.Run(sh.name, func(t *testing.T) {
			sets, beyond, lost := 0, 0, 0
			for n := 1; n <= maxN[sh.name]; n++ {
				for _, f := range forestsOfSize(t, sh.cfg, n, 2, uint64(si*1000+n)) {
					crashes := guaranteedCrashes(sh.cfg, n)
					subsets(f.Servers(), crashes, func(crashed []ServerID) {
						sets++
						if !checkReach(t, f, crashed) {
							t.Fatalf("n=%d: crashing %v (guaranteed %d) loses a live server\n%v", n, crashed, crashes, f)
						}
					})
					if n >= sh.cfg.Trees && !sh.cfg.Disjoint(n) && sh.cfg.Trees > 1 {
						// Beyond disjointness: count the (t-1)-crash sets
						// that do lose someone, to document the loss.
						subsets(f.Servers(), sh.cfg.Trees-1, func(crashed []ServerID) {
							beyond++
							if !checkReach(t, f, crashed) {
								lost++
							}
						})
					}
				}
			}
			t.Logf("%s: %d crash sets up to n=%d, all delivered; beyond disjointness %d of %d (t-1)-sets lose a server",
				sh.cfg, sets, maxN[sh.name], lost, beyond)
		})
	}
}

func TestResilienceRandomLarge(t *testing.T) {
	sizes := []int{100, 333, 819, 1000}
	trials := 80
	if testing.Short() {
		sizes, trials = []int{250, 1000}, 30
	}
	for si, sh := range paperShapes {
		t.Run(sh.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(si), 7))
			for _, n := range sizes {
				for _, f := range forestsOfSize(t, sh.cfg, n, 1, uint64(si*100000+n)) {
					crashes := guaranteedCrashes(sh.cfg, n)
					// Crashing leaves is harmless; aim at the servers
					// that forward (interior somewhere), roots included.
					var interior []ServerID
					for _, id := range f.Servers() {
						if len(f.InteriorTrees(id)) > 0 {
							interior = append(interior, id)
						}
					}
					all := f.Servers()
					for range trials {
						var crashed []ServerID
						for len(crashed) < crashes {
							pool := all
							if rng.IntN(10) < 8 {
								pool = interior
							}
							id := pool[rng.IntN(len(pool))]
							if !slices.Contains(crashed, id) {
								crashed = append(crashed, id)
							}
						}
						if !checkReach(t, f, crashed) {
							t.Fatalf("n=%d: crashing %v (guaranteed %d) loses a live server", n, crashed, crashes)
						}
					}
				}
			}
		})
	}
}

// TestResilienceTight shows that t-1 is the most a forest can promise: the t
// parents of any non-root server (one per tree, all different servers in a
// disjoint forest) cut it off when they crash.
func TestResilienceTight(t *testing.T) {
	for _, sh := range paperShapes {
		for _, n := range []int{sh.cfg.Trees + 1, 27, 100, 819} {
			if !sh.cfg.Disjoint(n) {
				continue
			}
			f := grow(t, sh.cfg, n)
			for _, v := range f.Servers() {
				var cut []ServerID
				for k := range sh.cfg.Trees {
					if p, ok := f.Parent(Color(k), v); ok && !slices.Contains(cut, p) {
						cut = append(cut, p)
					}
				}
				if len(cut) < sh.cfg.Trees {
					continue // a root somewhere: it receives its copy first-hand
				}
				if checkReach(t, f, cut) {
					t.Fatalf("%s n=%d: crashing the %d parents %v of %d did not cut it off", sh.cfg, n, len(cut), cut, v)
				}
				break
			}
		}
	}
}
