package watch

import (
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Event is a change to the tree as the data tree reports it: what happened,
// to which path, in which transaction.
type Event struct {
	Type zkproto.EventType // what happened
	Path string            // to which node
	Zxid int64             // in which entry
}

// Delivery is one notification to send: Event to the connection of Watcher.
type Delivery struct {
	Watcher WatcherID // whom to tell
	Event   Event     // what to tell
}

// trigger rules per event type: which kinds on the path itself fire, which of
// them are consumed, and whether persistent-recursive watches on ancestors
// fire. They restate DataTree's calls into its two managers:
//
//	create:  dataWatches(path, NodeCreated); childWatches(parent, NodeChildrenChanged)
//	delete:  dataWatches(path, NodeDeleted); childWatches(path, NodeDeleted) minus
//	         those already told; childWatches(parent, NodeChildrenChanged)
//	setData: dataWatches(path, NodeDataChanged)
//
// and WatchManager.triggerWatch: on the path every watcher with any watch in
// that manager fires and loses its STANDARD one; on ancestors only
// PERSISTENT_RECURSIVE fires, and only the data manager ever holds one.
type rule struct {
	fire, consume Mode
	ancestors     bool
}

func ruleFor(t zkproto.EventType) (rule, bool) {
	switch t {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		return rule{fire: dataSide, consume: oneShotData, ancestors: true}, true
	case zkproto.EventNodeDeleted:
		return rule{fire: allModes, consume: oneShotData | Child, ancestors: true}, true
	case zkproto.EventNodeChildrenChanged:
		return rule{fire: childSide, consume: Child}, true
	}
	return rule{}, false
}

// Trigger fires the watches ev concerns, appends one Delivery per watcher to
// tell (at most one per watcher even when several of its watches match),
// ordered by watcher id, to out and returns it. One-shot watches that fired
// are removed; persistent ones stay. Event types other than NodeCreated,
// NodeDeleted, NodeDataChanged and NodeChildrenChanged fire nothing.
//
// A create is reported as NodeCreated on the path and NodeChildrenChanged on
// its parent; a delete as NodeDeleted on the path and NodeChildrenChanged on
// its parent; a setData as NodeDataChanged: two Trigger calls for a create or
// delete, in that order, as ZooKeeper sends them.
//
// With no persistent-recursive watch registered anywhere, Trigger costs one
// map lookup and never walks the path's ancestors.
func (r *Registry) Trigger(ev Event, out []Delivery) []Delivery {
	rl, ok := ruleFor(ev.Type)
	if !ok {
		return out
	}
	told := r.scratch[:0]
	for w, m := range r.byPath[ev.Path] {
		if m&rl.fire == 0 {
			continue
		}
		told = append(told, w)
		// Deleting the entry being ranged over is safe in Go.
		r.set(ev.Path, w, m, m&^rl.consume)
	}
	walked := false
	if rl.ancestors && r.recursive > 0 {
		for p, ok := parent(ev.Path); ok; p, ok = parent(p) {
			for w, m := range r.byPath[p] {
				if m&PersistentRecursive != 0 {
					told = append(told, w)
					walked = true
				}
			}
		}
	}
	// Sorting bare ids is several times faster than sorting deliveries.
	slices.Sort(told)
	if walked {
		// A watcher with watches on the path and on an ancestor, or on
		// several ancestors, is told once.
		told = slices.Compact(told)
	}
	out = slices.Grow(out, len(told))
	for _, w := range told {
		out = append(out, Delivery{Watcher: w, Event: ev})
	}
	r.scratch = told[:0]
	return out
}

// parent returns the parent of path as PathParentIterator walks it ("/a/b" →
// "/a" → "/"); ok is false for "/" and for text that is not an absolute path,
// which the data tree never sends but which must not loop or panic.
func parent(path string) (string, bool) {
	if path == "/" {
		return "", false
	}
	i := strings.LastIndexByte(path, '/')
	switch {
	case i < 0:
		return "", false
	case i == 0:
		return "/", true
	}
	return path[:i], true
}
