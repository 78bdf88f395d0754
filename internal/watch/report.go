package watch

import (
	"cmp"
	"maps"
	"slices"
)

// Dump calls fn once per (path, watcher) pair with the kinds the watcher has
// there, ordered by path and then watcher id, for the wchc and wchp
// four-letter words. ZooKeeper prints only its data manager in those, so to
// reproduce its output skip pairs whose kinds are only Child.
func (r *Registry) Dump(fn func(path string, w WatcherID, mode Mode)) {
	for _, p := range slices.Sorted(maps.Keys(r.byPath)) {
		watchers := r.byPath[p]
		for _, w := range slices.Sorted(maps.Keys(watchers)) {
			fn(p, w, watchers[w])
		}
	}
}

// Summary is what the wchs four-letter word reports.
type Summary struct {
	// Connections is the number of watchers with at least one watch.
	Connections int
	// Paths is the number of watched paths.
	Paths int
	// Watches is the number of (path, watcher) pairs.
	Watches int
}

// Summary counts the watches as ZooKeeper's wchs does: from its data manager
// only, so a pair holding nothing but a child watch is not counted.
func (r *Registry) Summary() Summary {
	var s Summary
	conns := make(map[WatcherID]struct{})
	for _, watchers := range r.byPath {
		counted := false
		for w, m := range watchers {
			if m&dataSide == 0 {
				continue
			}
			s.Watches++
			conns[w] = struct{}{}
			if !counted {
				s.Paths++
				counted = true
			}
		}
	}
	s.Connections = len(conns)
	return s
}

// WatchesOf lists, each sorted, the paths on which w has each kind of watch,
// in the shape of a SetWatches2 request, so that the watches can be
// registered again elsewhere. A path may appear in several lists.
func (r *Registry) WatchesOf(w WatcherID) (data, exist, child, persistent, persistentRecursive []string) {
	for p := range r.byWatcher[w] {
		m := r.byPath[p][w]
		if m&Data != 0 {
			data = append(data, p)
		}
		if m&Exist != 0 {
			exist = append(exist, p)
		}
		if m&Child != 0 {
			child = append(child, p)
		}
		if m&Persistent != 0 {
			persistent = append(persistent, p)
		}
		if m&PersistentRecursive != 0 {
			persistentRecursive = append(persistentRecursive, p)
		}
	}
	for _, l := range [][]string{data, exist, child, persistent, persistentRecursive} {
		slices.SortFunc(l, cmp.Compare[string])
	}
	return data, exist, child, persistent, persistentRecursive
}
