// Package plan decides which locks leave a worker ensemble that holds too
// many (Hierarchical Chubby's rebalancing), as a pure function of the
// worker's lock paths: no I/O, same answer for the same input.
//
// The locks are ordered by domain, then name, and the part after one cut
// moves. By default the cut falls on the domain boundary nearest the
// middle, so that domains move whole and a client that uses one domain
// keeps talking to one worker (the paper's locality hints, and its future
// work of keeping a domain together even when the halves are then
// unequal); a worker holding a single domain is cut at the middle. The
// paper's own rule, equal halves whatever the domains, is the other mode.
package plan

import (
	"cmp"
	"fmt"
	"path"
	"slices"
)

// Mode is how the locks of an overloaded worker are split.
type Mode int

// Split modes.
const (
	// ByDomain cuts at the domain boundary nearest the middle, or at the
	// middle when there is only one domain.
	ByDomain Mode = iota
	// EqualHalves cuts at the middle (the upper half moves; it has one
	// lock more when the count is odd).
	EqualHalves
)

// String returns "domain" or "equal".
func (m Mode) String() string {
	if m == EqualHalves {
		return "equal"
	}
	return "domain"
}

// ParseMode parses "domain" or "equal".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "domain":
		return ByDomain, nil
	case "equal":
		return EqualHalves, nil
	}
	return 0, fmt.Errorf("split mode must be domain or equal, got %q", s)
}

// compareLocks orders lock paths by domain, then by name.
func compareLocks(a, b string) int {
	if c := cmp.Compare(path.Dir(a), path.Dir(b)); c != 0 {
		return c
	}
	return cmp.Compare(path.Base(a), path.Base(b))
}

// Split returns the locks to move off a worker that holds locks (paths,
// any order, no duplicates): a non-empty proper subset when there are two
// or more, in domain-then-name order.
func Split(locks []string, mode Mode) []string {
	n := len(locks)
	if n < 2 {
		return nil
	}
	sorted := slices.Clone(locks)
	slices.SortFunc(sorted, compareLocks)
	cut := n / 2
	if mode == ByDomain {
		best := -1
		for i := 1; i < n; i++ {
			if path.Dir(sorted[i]) == path.Dir(sorted[i-1]) {
				continue
			}
			// Nearest the middle; on a tie, the later cut, so that fewer
			// locks move.
			if best < 0 || abs(i-n/2) <= abs(best-n/2) {
				best = i
			}
		}
		if best > 0 {
			cut = best
		}
	}
	return sorted[cut:]
}

func abs(x int) int { return max(x, -x) }

// WholeDomains returns the domains all of whose locks in all are in moved:
// the domains that move whole, to be mapped to the destination so that
// their new locks follow. Sorted.
func WholeDomains(moved, all []string) []string {
	staying := map[string]bool{}
	movedSet := map[string]bool{}
	for _, l := range moved {
		movedSet[l] = true
	}
	for _, l := range all {
		if !movedSet[l] {
			staying[path.Dir(l)] = true
		}
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range moved {
		d := path.Dir(l)
		if !staying[d] && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
