package watch

import "github.com/giraffe-coord/giraffe/zkproto"

// Registry is the two-way watch index of one server. The zero value is not
// usable; call New.
//
// Invariants: byPath[p][w] != 0 exactly when p is in byWatcher[w]; no inner
// map is ever left empty; count and recursive agree with the entries.
type Registry struct {
	// byPath holds, per watched path, the kinds each watcher has there.
	byPath map[string]map[WatcherID]Mode
	// byWatcher holds, per watcher, the paths it watches, so that a closed
	// connection is cleaned up without scanning every path.
	byWatcher map[WatcherID]map[string]struct{}
	// count is ZooKeeper's zk_watch_count: (path, watcher) pairs held by the
	// data manager plus those held by the child manager.
	count int
	// recursive counts the pairs that include PersistentRecursive. While it
	// is zero, Trigger never looks at ancestors (ZooKeeper's
	// recursiveWatchQty optimisation), so writes cost one map lookup.
	recursive int
	// scratch is reused by Trigger to collect the watchers to tell.
	scratch []WatcherID
}

// New returns an empty registry.
func New() *Registry {
	return &Registry{
		byPath:    make(map[string]map[WatcherID]Mode),
		byWatcher: make(map[WatcherID]map[string]struct{}),
	}
}

// Add registers a watch of kind mode by w on path. Adding a kind w already
// has there changes nothing. mode must be exactly one kind; anything else is
// ignored.
func (r *Registry) Add(path string, mode Mode, w WatcherID) {
	if !mode.single() {
		return
	}
	old := r.byPath[path][w]
	r.set(path, w, old, old|mode)
}

// Remove is removeWatches: it removes the watches of kinds typ selects that w
// has on path and returns zkproto.OK if there was at least one, or
// zkproto.ErrNoWatcher. WatcherData covers data and exist watches,
// WatcherAny every kind including persistent ones. A type ZooKeeper does not
// know yields zkproto.ErrMarshallingError, as ZooKeeper answers it.
func (r *Registry) Remove(path string, typ zkproto.WatcherType, w WatcherID) zkproto.Code {
	sel, ok := selectorMask(typ)
	if !ok {
		return zkproto.ErrMarshallingError
	}
	old := r.byPath[path][w]
	if old&sel == 0 {
		return zkproto.ErrNoWatcher
	}
	r.set(path, w, old, old&^sel)
	return zkproto.OK
}

// Check is checkWatches: zkproto.OK if w has a watch of a kind typ selects on
// path, else zkproto.ErrNoWatcher (zkproto.ErrMarshallingError for an
// unknown type, as in Remove).
func (r *Registry) Check(path string, typ zkproto.WatcherType, w WatcherID) zkproto.Code {
	sel, ok := selectorMask(typ)
	if !ok {
		return zkproto.ErrMarshallingError
	}
	if r.byPath[path][w]&sel == 0 {
		return zkproto.ErrNoWatcher
	}
	return zkproto.OK
}

// RemoveWatcher drops every watch of w, for a closed connection.
func (r *Registry) RemoveWatcher(w WatcherID) {
	paths := r.byWatcher[w]
	for p := range paths {
		r.set(p, w, r.byPath[p][w], 0)
	}
}

// Count is the number of watches as ZooKeeper's mntr zk_watch_count counts
// them: one per (path, watcher) pair holding a data, exist, persistent or
// persistent-recursive watch, plus one per pair holding a child or
// persistent watch (a persistent watch lives in both of ZooKeeper's managers
// and counts twice).
func (r *Registry) Count() int { return r.count }

// Paths is the number of distinct paths with at least one watch.
func (r *Registry) Paths() int { return len(r.byPath) }

// set changes the kinds w has on path from old to new and keeps both indexes
// and the counters in step. Every mutation goes through here.
func (r *Registry) set(path string, w WatcherID, old, new Mode) {
	if old == new {
		return
	}
	r.count += weight(new) - weight(old)
	r.recursive += b2i(new&PersistentRecursive != 0) - b2i(old&PersistentRecursive != 0)
	if new == 0 {
		watchers := r.byPath[path]
		delete(watchers, w)
		if len(watchers) == 0 {
			delete(r.byPath, path)
		}
		paths := r.byWatcher[w]
		delete(paths, path)
		if len(paths) == 0 {
			delete(r.byWatcher, w)
		}
		return
	}
	watchers := r.byPath[path]
	if watchers == nil {
		watchers = make(map[WatcherID]Mode, 1)
		r.byPath[path] = watchers
	}
	watchers[w] = new
	if old == 0 {
		paths := r.byWatcher[w]
		if paths == nil {
			paths = make(map[string]struct{})
			r.byWatcher[w] = paths
		}
		paths[path] = struct{}{}
	}
}

// weight is how many of ZooKeeper's two managers hold a pair with kinds m.
func weight(m Mode) int { return b2i(m&dataSide != 0) + b2i(m&childSide != 0) }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
