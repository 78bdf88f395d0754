// Package lockcheck checks histories of lock requests as their clients saw
// them, knowing nothing of how the locks work: mutual exclusion, liveness,
// and, when asked, FIFO order and Chubby's lock-delay. The tests of the
// lock recipes (package recipes, the integration tests) record every
// request of their contenders in a History and Check it.
package lockcheck

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Hold is one lock request of a history, as its client saw it. Times are
// read from one clock (the tests run every client in one process), taken
// so that they bracket what the lock guarantees: Acquired after Lock
// returned, Released before Unlock was called.
type Hold struct {
	// Client names the requester (for messages only).
	Client string
	// Path is the lock's path; holds of different paths never conflict.
	Path string
	// Shared marks a shared (read) hold; other holds are exclusive.
	Shared bool
	// Position is the request's place in the lock's queue (the lock
	// node's czxid or sequence number), or NoPosition. Only the FIFO check
	// uses it.
	Position int64
	// Requested is when Lock was called.
	Requested time.Time
	// Acquired is when Lock returned; zero if the lock was never granted.
	Acquired time.Time
	// Released is when the hold ended: before Unlock was called, or, for
	// a Crashed hold, when the holder stopped acting (its process was cut
	// off). Zero if the hold never ended.
	Released time.Time
	// Crashed marks a hold ended by losing the holder's session instead of
	// an Unlock: the lock-delay check applies after it.
	Crashed bool
	// Abandoned marks a request given up on purpose before a grant (its
	// session was cut off while it waited): liveness does not apply to it.
	Abandoned bool
	// Generation is the fencing token the grant carried (a sequencer's
	// generation), or 0 when there is none. Only the generations check
	// uses it.
	Generation int64
}

// NoPosition is the Position of a hold that has none.
const NoPosition int64 = -1

// Options selects the properties Check verifies beyond mutual exclusion
// and liveness, which it always checks.
type Options struct {
	// FIFO: conflicting requests (at least one exclusive) are granted in
	// the order of their Positions.
	FIFO bool
	// LockDelay: after a Crashed hold released at t, no hold of the same
	// path is granted before t + LockDelay.
	LockDelay time.Duration
	// Generations: in grant order, the generations of a path's exclusive
	// holds strictly increase (so a service fencing with them refuses
	// every earlier holder).
	Generations bool
}

// Violation is one property a history breaks.
type Violation struct {
	// Property is "well-formed", "mutual exclusion", "fifo", "liveness",
	// "lock-delay" or "generation".
	Property string
	// Detail names the holds involved.
	Detail string
}

// String returns "property: detail".
func (v Violation) String() string { return v.Property + ": " + v.Detail }

// History records holds from many goroutines.
type History struct {
	mu    sync.Mutex
	holds []Hold
}

// Add records a hold.
func (h *History) Add(x Hold) {
	h.mu.Lock()
	h.holds = append(h.holds, x)
	h.mu.Unlock()
}

// Holds returns a copy of the holds recorded so far.
func (h *History) Holds() []Hold {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.holds)
}

// Check verifies a history of lock requests, knowing nothing of how
// the locks work: mutual exclusion (an exclusive hold overlaps no other
// hold of its path; shared holds may overlap each other), liveness (every
// request not Abandoned was granted and ended), and, as opts asks, FIFO
// order and the lock-delay. It returns every violation found, none for a
// correct history.
func Check(holds []Hold, opts Options) []Violation {
	var out []Violation
	add := func(prop, format string, args ...any) {
		out = append(out, Violation{Property: prop, Detail: fmt.Sprintf(format, args...)})
	}
	byPath := map[string][]Hold{}
	for _, h := range holds {
		switch {
		case !h.Acquired.IsZero() && h.Acquired.Before(h.Requested):
			add("well-formed", "%s: acquired before requested", h.Client)
			continue
		case !h.Released.IsZero() && (h.Acquired.IsZero() || h.Released.Before(h.Acquired)):
			add("well-formed", "%s: released before acquired", h.Client)
			continue
		}
		if !h.Abandoned && (h.Acquired.IsZero() || h.Released.IsZero()) {
			what := "never granted"
			if !h.Acquired.IsZero() {
				what = "never released"
			}
			add("liveness", "%s on %s: %s", h.Client, h.Path, what)
		}
		if !h.Acquired.IsZero() {
			byPath[h.Path] = append(byPath[h.Path], h)
		}
	}
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range byPath {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		granted := byPath[p]
		slices.SortFunc(granted, func(a, b Hold) int { return a.Acquired.Compare(b.Acquired) })
		checkExclusion(granted, add)
		if opts.FIFO {
			checkFIFO(granted, add)
		}
		if opts.LockDelay > 0 {
			checkLockDelay(granted, opts.LockDelay, add)
		}
		if opts.Generations {
			checkGenerations(granted, add)
		}
	}
	return out
}

// end is when a hold stopped holding; a hold never released holds
// forever.
func end(h Hold) time.Time {
	if h.Released.IsZero() {
		return time.Unix(1<<40, 0)
	}
	return h.Released
}

func conflict(a, b Hold) bool { return !a.Shared || !b.Shared }

// mode names h's mode in messages.
func mode(h Hold) string {
	if h.Shared {
		return "shared"
	}
	return "exclusive"
}

// checkExclusion sweeps the holds in grant order, keeping those still
// active: each new grant must not conflict with any of them.
func checkExclusion(granted []Hold, add func(string, string, ...any)) {
	var active []Hold
	for _, h := range granted {
		active = slices.DeleteFunc(active, func(a Hold) bool { return !end(a).After(h.Acquired) })
		for _, a := range active {
			if conflict(a, h) {
				add("mutual exclusion", "%s (%v, granted %s) overlaps %s (%v, held %s..%s) on %s",
					h.Client, mode(h), h.Acquired.Format(time.StampMicro), a.Client, mode(a),
					a.Acquired.Format(time.StampMicro), end(a).Format(time.StampMicro), h.Path)
			}
		}
		active = append(active, h)
	}
}

// checkFIFO: for conflicting granted holds a and b with a's position
// before b's, a was granted first.
func checkFIFO(granted []Hold, add func(string, string, ...any)) {
	var pos []Hold
	for _, h := range granted {
		if h.Position != NoPosition {
			pos = append(pos, h)
		}
	}
	slices.SortFunc(pos, func(a, b Hold) int { return cmp.Compare(a.Position, b.Position) })
	for i, a := range pos {
		for _, b := range pos[i+1:] {
			if conflict(a, b) && b.Acquired.Before(a.Acquired) {
				add("fifo", "%s (position %d) granted before %s (position %d) on %s",
					b.Client, b.Position, a.Client, a.Position, a.Path)
			}
		}
	}
}

// checkLockDelay: after a crashed hold, the next grants wait the delay.
func checkLockDelay(granted []Hold, delay time.Duration, add func(string, string, ...any)) {
	for _, c := range granted {
		if !c.Crashed || c.Released.IsZero() {
			continue
		}
		free := c.Released.Add(delay)
		for _, h := range granted {
			if h.Acquired.After(c.Released) && h.Acquired.Before(free) {
				add("lock-delay", "%s granted %v after %s's session was lost (delay %v) on %s",
					h.Client, h.Acquired.Sub(c.Released), c.Client, delay, h.Path)
			}
		}
	}
}

// checkGenerations: each exclusive grant carries a larger generation than
// the one granted before it.
func checkGenerations(granted []Hold, add func(string, string, ...any)) {
	var prev *Hold
	for i := range granted {
		h := &granted[i]
		if h.Shared {
			continue
		}
		if h.Generation <= 0 {
			add("generation", "%s on %s: granted without a generation", h.Client, h.Path)
			continue
		}
		if prev != nil && h.Generation <= prev.Generation {
			add("generation", "%s granted generation %d after %s's %d on %s",
				h.Client, h.Generation, prev.Client, prev.Generation, h.Path)
		}
		prev = h
	}
}
