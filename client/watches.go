package client

import (
	"context"
	"maps"
	"slices"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Event is a watch notification, or the end of a watch that can no longer
// fire.
type Event struct {
	// Type is the change (NodeCreated, ...), a *WatchRemoved type after
	// RemoveWatches, or EventNone when the watch ended with the session.
	Type zkproto.EventType
	// State is StateConnected for a notification, and the final state
	// (Expired, AuthFailed, Closed) for a watch ended by it.
	State State
	// Path is the znode the event is about.
	Path string
	// Zxid is the zxid of the change (ZooKeeper 3.9 sends it; 3.8 sends
	// -1); 0 for events the client makes up.
	Zxid int64
	// Err is non-nil when the watch ended without its event:
	// zkproto.ErrSessionExpired, zkproto.ErrAuthFailed or ErrClosed.
	Err error
}

// watchKind is the kind of a one-shot watch, as ZooKeeper's client keeps
// them (ZKWatchManager's data, exist and child tables).
type watchKind uint8

const (
	watchData  watchKind = iota // set by getData, or exists on a node
	watchExist                  // set by exists on a missing node
	watchChild                  // set by getChildren
	numWatchKinds
)

// setWatchesMaxBytes bounds the paths of one setWatches request
// (ClientCnxn.SET_WATCHES_MAX_LENGTH), so that restoring many watches does
// not produce a frame over jute.maxbuffer.
const setWatchesMaxBytes = 128 * 1024

// watchRegistry is the client's side of the session's watches, guarded by
// Conn.mu. Several watchers may share one server-side watch; an event
// fires all of them. It is what setWatches restores after a reconnection.
type watchRegistry struct {
	oneShot    [numWatchKinds]map[string][]chan Event
	persistent map[string][]*PersistentWatch
	recursive  map[string][]*PersistentWatch
}

func newWatchRegistry() watchRegistry {
	r := watchRegistry{
		persistent: make(map[string][]*PersistentWatch),
		recursive:  make(map[string][]*PersistentWatch),
	}
	for k := range r.oneShot {
		r.oneShot[k] = make(map[string][]chan Event)
	}
	return r
}

// newWatchChan returns the channel of a one-shot watch: it holds the one
// event, so delivering never blocks the reader.
func newWatchChan() chan Event { return make(chan Event, 1) }

func (r *watchRegistry) addOneShot(k watchKind, path string, ch chan Event) {
	r.oneShot[k][path] = append(r.oneShot[k][path], ch)
}

func (r *watchRegistry) addPersistent(w *PersistentWatch) {
	m := r.persistent
	if w.recursive {
		m = r.recursive
	}
	m[w.path] = append(m[w.path], w)
}

// fireOneShot delivers ev to the one-shot watches of kind k on ev.Path and
// forgets them.
func (r *watchRegistry) fireOneShot(k watchKind, ev Event) {
	for _, ch := range r.oneShot[k][ev.Path] {
		ch <- ev
		close(ch)
	}
	delete(r.oneShot[k], ev.Path)
}

// trigger routes a notification to the watchers it concerns, following
// ZooKeeper's ZKWatchManager.materialize: data changes and creation fire
// data and exist watches, child changes fire child watches, deletion fires
// all three; persistent watches on the path see every type, recursive ones
// on the path or an ancestor every type but NodeChildrenChanged.
func (r *watchRegistry) trigger(we zkproto.WatcherEvent, zxid int64) {
	ev := Event{Type: we.Type, State: State(we.State), Path: we.Path, Zxid: zxid}
	switch we.Type {
	case zkproto.EventNodeCreated, zkproto.EventNodeDataChanged:
		r.fireOneShot(watchData, ev)
		r.fireOneShot(watchExist, ev)
	case zkproto.EventNodeChildrenChanged:
		r.fireOneShot(watchChild, ev)
	case zkproto.EventNodeDeleted:
		r.fireOneShot(watchData, ev)
		r.fireOneShot(watchExist, ev)
		r.fireOneShot(watchChild, ev)
	default:
		return // servers send no other type on a live session
	}
	for _, w := range r.persistent[we.Path] {
		w.p.push(ev)
	}
	if we.Type == zkproto.EventNodeChildrenChanged {
		return
	}
	for p := we.Path; ; p = zkproto.ParentPath(p) {
		for _, w := range r.recursive[p] {
			w.p.push(ev)
		}
		if p == "/" || p == "" {
			break
		}
	}
}

// removed ends the watches a successful removeWatches(path, typ) removed
// on the server, telling each watcher with a *WatchRemoved event, as
// ZooKeeper's client does.
func (r *watchRegistry) removed(path string, typ zkproto.WatcherType) {
	oneShot := func(k watchKind, t zkproto.EventType) {
		r.fireOneShot(k, Event{Type: t, State: StateConnected, Path: path})
	}
	persistent := func(m map[string][]*PersistentWatch) {
		for _, w := range m[path] {
			w.end(Event{Type: zkproto.EventPersistentWatchRemoved, State: StateConnected, Path: path})
		}
		delete(m, path)
	}
	switch typ {
	case zkproto.WatcherData:
		oneShot(watchData, zkproto.EventDataWatchRemoved)
		oneShot(watchExist, zkproto.EventDataWatchRemoved)
	case zkproto.WatcherChildren:
		oneShot(watchChild, zkproto.EventChildWatchRemoved)
	case zkproto.WatcherPersistent:
		persistent(r.persistent)
	case zkproto.WatcherPersistentRecursive:
		persistent(r.recursive)
	case zkproto.WatcherAny:
		oneShot(watchData, zkproto.EventDataWatchRemoved)
		oneShot(watchExist, zkproto.EventDataWatchRemoved)
		oneShot(watchChild, zkproto.EventChildWatchRemoved)
		persistent(r.persistent)
		persistent(r.recursive)
	}
}

// endAll ends every watch with the session's final state.
func (r *watchRegistry) endAll(s State, err error) {
	ev := Event{Type: zkproto.EventNone, State: s, Err: err}
	for k := range r.oneShot {
		for path, chs := range r.oneShot[k] {
			ev.Path = path
			for _, ch := range chs {
				ch <- ev
				close(ch)
			}
		}
		clear(r.oneShot[k])
	}
	for _, m := range []map[string][]*PersistentWatch{r.persistent, r.recursive} {
		for path, ws := range m {
			ev.Path = path
			for _, w := range ws {
				w.end(ev)
			}
		}
		clear(m)
	}
}

// setWatchesCalls builds the requests that re-register every watch on a
// new connection: setWatches (101), or setWatches2 (105) when persistent
// watches exist, since older servers know only 101. The server fires at
// once the watches whose nodes changed after relZxid, so no event is lost
// while disconnected.
func (r *watchRegistry) setWatchesCalls(relZxid int64) []*call {
	var lists [5][]string
	for k := range r.oneShot {
		lists[k] = slices.Sorted(maps.Keys(r.oneShot[k]))
	}
	lists[3] = slices.Sorted(maps.Keys(r.persistent))
	lists[4] = slices.Sorted(maps.Keys(r.recursive))
	v2 := len(lists[3])+len(lists[4]) > 0

	var calls []*call
	var batch [5][]string
	size, n := 0, 0
	emit := func() {
		if n == 0 {
			return
		}
		// Empty lists, never null ones: ZooKeeper's setWatches iterates
		// them without a null check.
		for i := range batch {
			if batch[i] == nil {
				batch[i] = []string{}
			}
		}
		var cl *call
		if v2 {
			cl = newCall(zkproto.OpSetWatches2, &zkproto.SetWatches2{RelativeZxid: relZxid,
				DataWatches: batch[0], ExistWatches: batch[1], ChildWatches: batch[2],
				PersistentWatches: batch[3], PersistentRecursiveWatches: batch[4]}, nil)
		} else {
			cl = newCall(zkproto.OpSetWatches, &zkproto.SetWatches{RelativeZxid: relZxid,
				DataWatches: batch[0], ExistWatches: batch[1], ChildWatches: batch[2]}, nil)
		}
		cl.setXid(zkproto.XidSetWatches)
		cl.internal = true
		calls = append(calls, cl)
		batch, size, n = [5][]string{}, 0, 0
	}
	for k, list := range lists {
		for _, p := range list {
			if n > 0 && size+len(p) > setWatchesMaxBytes {
				emit()
			}
			batch[k] = append(batch[k], p)
			size += len(p)
			n++
		}
	}
	emit()
	return calls
}

// PersistentWatch is a watch set by AddWatch: it stays until removed and
// reports every change of its node (or, when recursive, of its subtree)
// on Events, in the order the server sent them.
type PersistentWatch struct {
	c         *Conn
	path      string
	recursive bool
	p         *pump[Event]
}

// Path returns the watched path.
func (w *PersistentWatch) Path() string { return w.path }

// Recursive reports whether the watch covers the subtree.
func (w *PersistentWatch) Recursive() bool { return w.recursive }

// Events returns the watch's events. Events queue without bound until
// read. After the watch ends (RemoveWatches: a PersistentWatchRemoved
// event; the session's end: an EventNone event with Err set) the channel is
// closed; Close closes it at once.
func (w *PersistentWatch) Events() <-chan Event { return w.p.out }

// Remove removes this kind of persistent watch on the path from the
// session (every PersistentWatch of the same path and kind ends).
func (w *PersistentWatch) Remove(ctx context.Context) error {
	typ := zkproto.WatcherPersistent
	if w.recursive {
		typ = zkproto.WatcherPersistentRecursive
	}
	return w.c.RemoveWatches(ctx, w.path, typ)
}

// end delivers the last event and closes the channel once it is read.
func (w *PersistentWatch) end(ev Event) {
	w.p.push(ev)
	w.p.finish()
}
