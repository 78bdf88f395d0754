package plan

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"testing"
)

func TestSplitExamples(t *testing.T) {
	locks := func(spec ...any) []string { // domain, count, domain, count...
		var out []string
		for i := 0; i < len(spec); i += 2 {
			for j := range spec[i+1].(int) {
				out = append(out, fmt.Sprintf("%s/l%03d", spec[i], j))
			}
		}
		return out
	}
	tests := []struct {
		name  string
		locks []string
		mode  Mode
		want  int    // locks moved
		first string // first moved lock
	}{
		{"three domains of 100", locks("/c1", 100, "/c2", 100, "/c3", 100), ByDomain, 100, "/c3/l000"},
		{"two domains", locks("/a", 30, "/b", 10), ByDomain, 10, "/b/l000"},
		{"one domain: the middle", locks("/a", 10), ByDomain, 5, "/a/l005"},
		{"equal halves ignore domains", locks("/a", 30, "/b", 10), EqualHalves, 20, "/a/l020"},
		{"odd count", locks("/a", 7), EqualHalves, 4, "/a/l003"},
		{"lopsided domains move whole", locks("/a", 1, "/b", 99), ByDomain, 99, "/b/l000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.locks)
			rand.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			got := Split(in, tc.mode)
			if len(got) != tc.want || got[0] != tc.first {
				t.Fatalf("moved %d starting at %q, want %d starting at %q", len(got), got[0], tc.want, tc.first)
			}
		})
	}
	if Split([]string{"/a"}, ByDomain) != nil || Split(nil, EqualHalves) != nil {
		t.Fatal("fewer than two locks must not split")
	}
}

// TestSplitProperties checks on random inputs: the moved locks are a
// non-empty proper subset, a suffix of the domain-then-name order; by
// domain the cut is a domain boundary nearest the middle whenever there
// is a boundary; equal halves differ by at most one; WholeDomains names
// exactly the domains with no lock left behind.
func TestSplitProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		var locks []string
		seen := map[string]bool{}
		for range 2 + r.IntN(60) {
			l := fmt.Sprintf("/d%d/s%d/l%d", r.IntN(4), r.IntN(2), r.IntN(30))
			if r.IntN(5) == 0 {
				l = fmt.Sprintf("/top%d", r.IntN(10))
			}
			if !seen[l] {
				seen[l] = true
				locks = append(locks, l)
			}
		}
		if len(locks) < 2 {
			continue
		}
		sorted := slices.Clone(locks)
		slices.SortFunc(sorted, compareLocks)
		for _, mode := range []Mode{ByDomain, EqualHalves} {
			moved := Split(locks, mode)
			n, k := len(locks), len(moved)
			if k == 0 || k == n || !slices.Equal(moved, sorted[n-k:]) {
				t.Fatalf("iter %d %v: moved %v is not a proper suffix of %v", iter, mode, moved, sorted)
			}
			cut := n - k
			switch mode {
			case EqualHalves:
				if cut != n/2 {
					t.Fatalf("iter %d: equal halves cut at %d of %d", iter, cut, n)
				}
			case ByDomain:
				var bounds []int
				for i := 1; i < n; i++ {
					if path.Dir(sorted[i]) != path.Dir(sorted[i-1]) {
						bounds = append(bounds, i)
					}
				}
				if len(bounds) == 0 {
					if cut != n/2 {
						t.Fatalf("iter %d: one domain cut at %d of %d", iter, cut, n)
					}
					break
				}
				if !slices.Contains(bounds, cut) {
					t.Fatalf("iter %d: cut %d is not a domain boundary %v", iter, cut, bounds)
				}
				for _, b := range bounds {
					if abs(b-n/2) < abs(cut-n/2) {
						t.Fatalf("iter %d: boundary %d is nearer the middle than cut %d", iter, b, cut)
					}
				}
			}
			whole := WholeDomains(moved, locks)
			for _, d := range whole {
				for _, l := range locks {
					if path.Dir(l) == d && !slices.Contains(moved, l) {
						t.Fatalf("iter %d: domain %s reported whole but %s stays", iter, d, l)
					}
				}
			}
			for _, l := range moved {
				d := path.Dir(l)
				all := true
				for _, o := range locks {
					if path.Dir(o) == d && !slices.Contains(moved, o) {
						all = false
					}
				}
				if all != slices.Contains(whole, d) {
					t.Fatalf("iter %d: domain %s whole=%v but WholeDomains says %v", iter, d, all, whole)
				}
			}
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range []Mode{ByDomain, EqualHalves} {
		got, err := ParseMode(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMode("half"); err == nil {
		t.Fatal("ParseMode accepted half")
	}
}
