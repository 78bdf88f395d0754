package console

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
)

// This file recognizes the coordination recipes of the common ZooKeeper
// client libraries in a znode's children, so the data browser can say who
// holds a lock, who waits, who leads: every such recipe is a directory of
// sequential children, served in the order of their ten-digit sequence
// suffixes.

// Child is what Recognize needs of one child: its name, and the session
// that owns it when it is ephemeral.
type Child struct {
	Name string
	// Owner is the owning session as Zxid formats it ("0x0": none).
	Owner string
}

// Recipe is a recipe recognized in a znode's children.
type Recipe struct {
	// Kind is "lock", "read-write lock", "election", "semaphore" or
	// "queue".
	Kind string `json:"kind"`
	// Layout names the libraries whose node names these are.
	Layout string `json:"layout"`
	// Holders hold the lock or the leases, or lead, or are the queue's
	// head; Waiting wait behind them, in the order they are served.
	Holders []Contender `json:"holders"`
	Waiting []Contender `json:"waiting"`
}

// Contender is one child of a recipe: a contender for a lock or for
// leadership, a lease, or a queue item.
type Contender struct {
	Name string `json:"name"`
	// Seq is the sequence suffix the server gave the node.
	Seq int64 `json:"seq"`
	// Session owns the node when it is ephemeral ("0x0" otherwise).
	Session string `json:"session"`
	// Mode is "read" or "write" in a read-write lock.
	Mode string `json:"mode,omitempty"`
}

// layout is one library's naming of a recipe's nodes: a child belongs to
// it when its name, without the sequence suffix, contains marker (and
// mode, in a read-write lock, says which side the marker is).
type layout struct {
	kind, name, marker, mode string
}

// layouts are tried in order; the first that claims every sequential
// child wins, so the more specific markers come first.
var layouts = []layout{
	{"read-write lock", "kazoo ReadLock/WriteLock", "__rlock__", "read"},
	{"read-write lock", "kazoo ReadLock/WriteLock", "__lock__", "write"},
	{"read-write lock", "Curator InterProcessReadWriteLock", "__READ__", "read"},
	{"read-write lock", "Curator InterProcessReadWriteLock", "__WRIT__", "write"},
	{"lock", "kazoo Lock, Election", "__lock__", ""},
	{"lock", "Curator InterProcessMutex, LeaderSelector", "-lock-", ""},
	{"election", "Curator LeaderLatch", "-latch-", ""},
	{"semaphore", "Curator InterProcessSemaphoreV2", "-lease-", ""},
	{"lock", "ZooKeeper's lock recipe", "lock-", ""},
	{"election", "ZooKeeper's election recipe", "n_", ""},
	{"queue", "Curator DistributedQueue", "queue-", ""},
	{"queue", "kazoo Queue", "entry-", ""},
	{"queue", "ZooKeeper's queue recipe", "qn-", ""},
}

// Recognize returns the recipe children form, or nil when they form none
// it knows: every child must be sequential and carry the markers of one
// library's recipe (the other side of a read-write lock allowed).
func Recognize(children []Child) *Recipe {
	type node struct {
		Contender
		stem string
	}
	var nodes []node
	for _, c := range children {
		stem, seq, ok := splitSeq(c.Name)
		if !ok {
			return nil
		}
		nodes = append(nodes, node{Contender{Name: c.Name, Seq: seq, Session: c.Owner}, stem})
	}
	if len(nodes) == 0 {
		return nil
	}
	slices.SortStableFunc(nodes, func(a, b node) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, l := range layouts {
		r := &Recipe{Kind: l.kind, Layout: l.name, Holders: []Contender{}, Waiting: []Contender{}}
		all := true
		for _, n := range nodes {
			m, ok := l.modeOf(n.stem)
			if !ok {
				all = false
				break
			}
			n.Mode = m
			r.place(n.Contender)
		}
		// Write locks alone are kazoo's Lock as much as its WriteLock.
		if all && (l.name != "kazoo ReadLock/WriteLock" || slices.ContainsFunc(r.Holders, isReader) || slices.ContainsFunc(r.Waiting, isReader)) {
			return r
		}
	}
	return nil
}

func isReader(c Contender) bool { return c.Mode == "read" }

// modeOf says whether stem is this layout's, and its side in a
// read-write lock (whose two sides are two entries of layouts).
func (l layout) modeOf(stem string) (string, bool) {
	if l.kind != "read-write lock" {
		return "", strings.Contains(stem, l.marker)
	}
	for _, other := range layouts {
		if other.name == l.name && strings.Contains(stem, other.marker) {
			return other.mode, true
		}
	}
	return "", false
}

// place puts the next contender, in serving order, among the holders or
// the waiting: one holder for a lock or an election, every lease of a
// semaphore, the readers ahead of the first writer (or that writer alone)
// in a read-write lock, the head of a queue.
func (r *Recipe) place(c Contender) {
	hold := false
	switch r.Kind {
	case "semaphore":
		hold = true
	case "read-write lock":
		first := len(r.Holders) == 0
		hold = len(r.Waiting) == 0 && (first || (c.Mode == "read" && r.Holders[0].Mode == "read"))
	default:
		hold = len(r.Holders) == 0
	}
	if hold {
		r.Holders = append(r.Holders, c)
	} else {
		r.Waiting = append(r.Waiting, c)
	}
}

// splitSeq splits a sequential node's name into its stem and its
// ten-digit sequence suffix.
func splitSeq(name string) (string, int64, bool) {
	if len(name) < 10 {
		return "", 0, false
	}
	stem, digits := name[:len(name)-10], name[len(name)-10:]
	for i := range len(digits) {
		if digits[i] < '0' || digits[i] > '9' {
			return "", 0, false
		}
	}
	n, _ := strconv.ParseInt(digits, 10, 64)
	return stem, n, true
}
