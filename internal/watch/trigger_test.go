package watch

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

const (
	created  = zkproto.EventNodeCreated
	deleted  = zkproto.EventNodeDeleted
	changed  = zkproto.EventNodeDataChanged
	children = zkproto.EventNodeChildrenChanged
)

// fire runs one Trigger and returns the watchers told, checking that every
// delivery carries the event unchanged.
func fire(t *testing.T, r *Registry, typ zkproto.EventType, path string) []WatcherID {
	t.Helper()
	ev := Event{Type: typ, Path: path, Zxid: 42}
	var ws []WatcherID
	for _, d := range r.Trigger(ev, nil) {
		if d.Event != ev {
			t.Fatalf("delivery carries %+v, want %+v", d.Event, ev)
		}
		ws = append(ws, d.Watcher)
	}
	return ws
}

// TestTriggerEachModeAndEvent registers one watch of each kind on /a by its
// own watcher and checks, for every event type on /a, who is told and which
// watches are left: ZooKeeper's table of which event fires which watch.
func TestTriggerEachModeAndEvent(t *testing.T) {
	const wData, wExist, wChild, wPers, wRec = 1, 2, 3, 4, 5
	all := []WatcherID{wData, wExist, wChild, wPers, wRec}
	tests := []struct {
		typ  zkproto.EventType
		told []WatcherID
		left []WatcherID // watchers that still have a watch on /a
	}{
		{created, []WatcherID{wData, wExist, wPers, wRec}, []WatcherID{wChild, wPers, wRec}},
		{changed, []WatcherID{wData, wExist, wPers, wRec}, []WatcherID{wChild, wPers, wRec}},
		{deleted, all, []WatcherID{wPers, wRec}},
		{children, []WatcherID{wChild, wPers}, []WatcherID{wData, wExist, wPers, wRec}},
		{zkproto.EventNone, nil, all},
		{zkproto.EventDataWatchRemoved, nil, all},
		{zkproto.EventPersistentWatchRemoved, nil, all},
	}
	for _, tc := range tests {
		r := New()
		r.Add("/a", Data, wData)
		r.Add("/a", Exist, wExist)
		r.Add("/a", Child, wChild)
		r.Add("/a", Persistent, wPers)
		r.Add("/a", PersistentRecursive, wRec)
		if got := fire(t, r, tc.typ, "/a"); !slices.Equal(got, tc.told) {
			t.Errorf("%v on /a told %v, want %v", tc.typ, got, tc.told)
		}
		var left []WatcherID
		r.Dump(func(_ string, w WatcherID, _ Mode) { left = append(left, w) })
		if !slices.Equal(left, tc.left) {
			t.Errorf("after %v on /a, watches left for %v, want %v", tc.typ, left, tc.left)
		}
		// The same event again reaches only the persistent watches.
		var again []WatcherID
		for _, w := range tc.told {
			if w == wPers || w == wRec {
				again = append(again, w)
			}
		}
		if got := fire(t, r, tc.typ, "/a"); !slices.Equal(got, again) {
			t.Errorf("second %v on /a told %v, want %v", tc.typ, got, again)
		}
		checkInvariants(t, r)
	}
}

func TestOneShotFiresOnce(t *testing.T) {
	r := New()
	r.Add("/a", Data, 1)
	r.Add("/a", Child, 1)
	if got := fire(t, r, changed, "/a"); !slices.Equal(got, []WatcherID{1}) {
		t.Fatalf("first change told %v", got)
	}
	if got := fire(t, r, changed, "/a"); got != nil {
		t.Fatalf("second change told %v, the data watch should be gone", got)
	}
	if r.Check("/a", zkproto.WatcherChildren, 1) != zkproto.OK {
		t.Fatal("a data event consumed the child watch")
	}
	if got := fire(t, r, children, "/a"); !slices.Equal(got, []WatcherID{1}) {
		t.Fatalf("children change told %v", got)
	}
	if r.Count() != 0 || r.Paths() != 0 {
		t.Fatalf("Count %d Paths %d after both one-shots fired", r.Count(), r.Paths())
	}
	checkInvariants(t, r)
}

func TestPersistentStays(t *testing.T) {
	r := New()
	r.Add("/a", Persistent, 7)
	for i, typ := range []zkproto.EventType{created, changed, children, deleted, created} {
		if got := fire(t, r, typ, "/a"); !slices.Equal(got, []WatcherID{7}) {
			t.Fatalf("event %d (%v) told %v", i, typ, got)
		}
	}
	// Not recursive: events on a child are not seen.
	if got := fire(t, r, changed, "/a/b"); got != nil {
		t.Fatalf("persistent watch on /a saw a change of /a/b: %v", got)
	}
}

func TestRecursive(t *testing.T) {
	tests := []struct {
		watch string
		typ   zkproto.EventType
		path  string
		want  bool
	}{
		{"/a", created, "/a/b/c", true},
		{"/a", deleted, "/a/b/c", true},
		{"/a", changed, "/a/b", true},
		{"/a", children, "/a/b", false},
		{"/a", children, "/a", false},
		{"/a", created, "/a", true},
		{"/a", deleted, "/a", true},
		{"/a", changed, "/ab", false}, // a sibling sharing a prefix
		{"/a", changed, "/", false},
		{"/a/b", changed, "/a", false},
		{"/", created, "/x/y/z", true},
		{"/", changed, "/", true},
		{"/", children, "/", false},
		{"/", deleted, "/zookeeper/quota", true},
	}
	for _, tc := range tests {
		r := New()
		r.Add(tc.watch, PersistentRecursive, 9)
		got := fire(t, r, tc.typ, tc.path)
		if (got != nil) != tc.want {
			t.Errorf("recursive on %s, %v on %s: told %v, want told=%v", tc.watch, tc.typ, tc.path, got, tc.want)
		}
		if r.Check(tc.watch, zkproto.WatcherPersistentRecursive, 9) != zkproto.OK {
			t.Errorf("recursive watch on %s did not stay", tc.watch)
		}
	}
}

func TestDedup(t *testing.T) {
	r := New()
	// Watcher 1: everything on /a/b plus recursive on / and /a.
	for _, m := range []Mode{Data, Child, Persistent, PersistentRecursive} {
		r.Add("/a/b", m, 1)
	}
	r.Add("/", PersistentRecursive, 1)
	r.Add("/a", PersistentRecursive, 1)
	// Watcher 2: only ancestors, twice.
	r.Add("/", PersistentRecursive, 2)
	r.Add("/a", PersistentRecursive, 2)
	// Watcher 3: data watch on /a/b.
	r.Add("/a/b", Exist, 3)
	for _, typ := range []zkproto.EventType{deleted, created, changed} {
		got := fire(t, r, typ, "/a/b")
		want := []WatcherID{1, 2}
		if typ == deleted {
			want = []WatcherID{1, 2, 3}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%v on /a/b told %v, want %v", typ, got, want)
		}
	}
	if r.Check("/a/b", zkproto.WatcherData, 1) != zkproto.ErrNoWatcher ||
		r.Check("/a/b", zkproto.WatcherChildren, 1) != zkproto.ErrNoWatcher {
		t.Error("NodeDeleted left a one-shot watch of watcher 1")
	}
	checkInvariants(t, r)
}

func TestDeliveryOrderAndAppend(t *testing.T) {
	r := New()
	for _, w := range []WatcherID{50, 3, 1000, 7, 1, 999} {
		r.Add("/n", Data, w)
	}
	prefix := []Delivery{{Watcher: 123}}
	out := r.Trigger(Event{Type: changed, Path: "/n", Zxid: 5}, prefix)
	if out[0].Watcher != 123 {
		t.Fatal("Trigger overwrote what out already held")
	}
	var got []WatcherID
	for _, d := range out[1:] {
		got = append(got, d.Watcher)
	}
	if want := []WatcherID{1, 3, 7, 50, 999, 1000}; !slices.Equal(got, want) {
		t.Fatalf("delivered to %v, want %v", got, want)
	}
}

func TestNoAncestorWalkWithoutRecursive(t *testing.T) {
	r := New()
	r.Add("/a", PersistentRecursive, 1)
	r.Add("/a", PersistentRecursive, 1)
	r.Add("/b", PersistentRecursive, 2)
	if r.recursive != 2 {
		t.Fatalf("recursive = %d, want 2", r.recursive)
	}
	r.Remove("/a", zkproto.WatcherAny, 1)
	r.RemoveWatcher(2)
	if r.recursive != 0 {
		t.Fatalf("recursive = %d after removing every recursive watch", r.recursive)
	}
	r.Add("/a", Data, 1)
	allocs := testing.AllocsPerRun(100, func() {
		r.Trigger(Event{Type: changed, Path: "/x/y/z"}, nil)
	})
	if allocs != 0 {
		t.Errorf("Trigger with no matching watch allocates %v times", allocs)
	}
}

func TestParent(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"/a/b/c", "/a/b", true},
		{"/a", "/", true},
		{"/", "", false},
		{"", "", false},
		{"rel", "", false},
	}
	for _, tc := range tests {
		got, ok := parent(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parent(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	// Malformed paths must not loop or panic with recursive watches present.
	r := New()
	r.Add("/", PersistentRecursive, 1)
	for _, p := range []string{"", "rel", "a/b", "//", "/a/"} {
		r.Trigger(Event{Type: changed, Path: p}, nil)
	}
}
