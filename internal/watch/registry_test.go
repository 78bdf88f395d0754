package watch

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// checkInvariants verifies the two indexes agree, no empty map is kept and
// the counters match the entries.
func checkInvariants(t *testing.T, r *Registry) {
	t.Helper()
	count, recursive, pairs := 0, 0, 0
	for p, watchers := range r.byPath {
		if len(watchers) == 0 {
			t.Fatalf("empty watcher map kept for %q", p)
		}
		for w, m := range watchers {
			if m == 0 || m&^allModes != 0 {
				t.Fatalf("bad mode %v for %q/%d", m, p, w)
			}
			if _, ok := r.byWatcher[w][p]; !ok {
				t.Fatalf("%q/%d missing from byWatcher", p, w)
			}
			count += weight(m)
			recursive += b2i(m&PersistentRecursive != 0)
			pairs++
		}
	}
	for w, paths := range r.byWatcher {
		if len(paths) == 0 {
			t.Fatalf("empty path map kept for watcher %d", w)
		}
		pairs -= len(paths)
	}
	if pairs != 0 {
		t.Fatalf("byWatcher holds %d pairs more than byPath", -pairs)
	}
	if count != r.count || recursive != r.recursive {
		t.Fatalf("counters %d/%d, entries say %d/%d", r.count, r.recursive, count, recursive)
	}
}

func TestRemoveAndCheck(t *testing.T) {
	type step struct {
		typ         zkproto.WatcherType
		check, drop zkproto.Code
	}
	tests := []struct {
		name  string
		modes []Mode
		steps []step
		left  Mode
	}{
		{"data by data", []Mode{Data}, []step{{zkproto.WatcherData, zkproto.OK, zkproto.OK}, {zkproto.WatcherData, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher}}, 0},
		{"exist by data", []Mode{Exist}, []step{{zkproto.WatcherData, zkproto.OK, zkproto.OK}}, 0},
		{"data and exist at once", []Mode{Data, Exist}, []step{{zkproto.WatcherData, zkproto.OK, zkproto.OK}}, 0},
		{"data not by children", []Mode{Data}, []step{{zkproto.WatcherChildren, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher}}, Data},
		{"child by children", []Mode{Child, Data}, []step{{zkproto.WatcherChildren, zkproto.OK, zkproto.OK}}, Data},
		{"persistent not by data", []Mode{Persistent}, []step{
			{zkproto.WatcherData, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher},
			{zkproto.WatcherChildren, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher},
			{zkproto.WatcherPersistentRecursive, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher},
		}, Persistent},
		{"persistent by persistent", []Mode{Persistent, Child}, []step{{zkproto.WatcherPersistent, zkproto.OK, zkproto.OK}}, Child},
		{"recursive by recursive", []Mode{PersistentRecursive}, []step{
			{zkproto.WatcherPersistent, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher},
			{zkproto.WatcherPersistentRecursive, zkproto.OK, zkproto.OK},
		}, 0},
		{"any removes everything", []Mode{Data, Child, Persistent, PersistentRecursive}, []step{
			{zkproto.WatcherAny, zkproto.OK, zkproto.OK},
			{zkproto.WatcherAny, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher},
		}, 0},
		{"any on recursive only", []Mode{PersistentRecursive}, []step{{zkproto.WatcherAny, zkproto.OK, zkproto.OK}}, 0},
		{"nothing there", nil, []step{{zkproto.WatcherAny, zkproto.ErrNoWatcher, zkproto.ErrNoWatcher}}, 0},
		{"unknown type", []Mode{Data}, []step{
			{0, zkproto.ErrMarshallingError, zkproto.ErrMarshallingError},
			{6, zkproto.ErrMarshallingError, zkproto.ErrMarshallingError},
		}, Data},
	}
	for _, tc := range tests {
		r := New()
		for _, m := range tc.modes {
			r.Add("/p", m, 1)
		}
		r.Add("/p", Data, 2) // another watcher's watch is never touched
		for i, s := range tc.steps {
			if got := r.Check("/p", s.typ, 1); got != s.check {
				t.Errorf("%s: step %d Check(%d) = %v, want %v", tc.name, i, s.typ, got, s.check)
			}
			if got := r.Remove("/p", s.typ, 1); got != s.drop {
				t.Errorf("%s: step %d Remove(%d) = %v, want %v", tc.name, i, s.typ, got, s.drop)
			}
		}
		var left Mode
		r.Dump(func(_ string, w WatcherID, m Mode) {
			if w == 1 {
				left = m
			}
		})
		if left != tc.left {
			t.Errorf("%s: left %v, want %v", tc.name, left, tc.left)
		}
		if r.Check("/p", zkproto.WatcherData, 2) != zkproto.OK {
			t.Errorf("%s: watcher 2 lost its watch", tc.name)
		}
		if r.Check("/other", zkproto.WatcherAny, 1) != zkproto.ErrNoWatcher {
			t.Errorf("%s: watch reported on an unwatched path", tc.name)
		}
		checkInvariants(t, r)
	}
}

func TestAddIgnoresInvalidModes(t *testing.T) {
	r := New()
	for _, m := range []Mode{0, Data | Child, 1 << 5, 0xff} {
		r.Add("/p", m, 1)
	}
	if r.Count() != 0 || r.Paths() != 0 {
		t.Fatalf("invalid modes registered watches: Count %d Paths %d", r.Count(), r.Paths())
	}
}

func TestModeFromAddWatch(t *testing.T) {
	if m, ok := ModeFromAddWatch(zkproto.AddWatchPersistent); !ok || m != Persistent {
		t.Errorf("persistent maps to %v, %v", m, ok)
	}
	if m, ok := ModeFromAddWatch(zkproto.AddWatchPersistentRecursive); !ok || m != PersistentRecursive {
		t.Errorf("recursive maps to %v, %v", m, ok)
	}
	for _, bad := range []int32{-1, 2, 1 << 30} {
		if _, ok := ModeFromAddWatch(bad); ok {
			t.Errorf("mode %d accepted", bad)
		}
	}
}

func TestModeString(t *testing.T) {
	tests := map[Mode]string{
		0:                           "none",
		Data:                        "data",
		Child | PersistentRecursive: "child|persistentRecursive",
		Exist | 0x80:                "exist|unknown",
	}
	for m, want := range tests {
		if got := m.String(); got != want {
			t.Errorf("Mode(%d).String() = %q, want %q", m, got, want)
		}
	}
}

func TestRemoveWatcherCleansUp(t *testing.T) {
	r := New()
	paths := []string{"/", "/a", "/a/b", "/c"}
	for _, p := range paths {
		for _, m := range []Mode{Data, Exist, Child, Persistent, PersistentRecursive} {
			r.Add(p, m, 1)
		}
		r.Add(p, Data, 2)
	}
	// zk_watch_count: per path watcher 1 is in both managers (2) and
	// watcher 2 in the data manager (1).
	if r.Count() != 3*len(paths) || r.Paths() != len(paths) {
		t.Fatalf("Count %d Paths %d", r.Count(), r.Paths())
	}
	r.RemoveWatcher(1)
	checkInvariants(t, r)
	if r.Count() != len(paths) || r.recursive != 0 {
		t.Fatalf("after removing watcher 1: Count %d recursive %d", r.Count(), r.recursive)
	}
	r.RemoveWatcher(2)
	r.RemoveWatcher(3) // unknown watcher: no-op
	if r.Count() != 0 || r.Paths() != 0 || len(r.byPath) != 0 || len(r.byWatcher) != 0 || r.recursive != 0 {
		t.Fatalf("leak: Count %d Paths %d byPath %d byWatcher %d recursive %d",
			r.Count(), r.Paths(), len(r.byPath), len(r.byWatcher), r.recursive)
	}
}

func TestCountMatchesZooKeeper(t *testing.T) {
	tests := []struct {
		modes []Mode
		want  int
	}{
		{[]Mode{Data}, 1},
		{[]Mode{Data, Exist}, 1},
		{[]Mode{Child}, 1},
		{[]Mode{Data, Child}, 2},
		{[]Mode{Persistent}, 2},
		{[]Mode{PersistentRecursive}, 1},
		{[]Mode{Data, Persistent}, 2},
		{[]Mode{Data, Child, Persistent, PersistentRecursive}, 2},
	}
	for _, tc := range tests {
		r := New()
		for _, m := range tc.modes {
			r.Add("/x", m, 1)
		}
		if r.Count() != tc.want {
			t.Errorf("%v: Count %d, want %d", tc.modes, r.Count(), tc.want)
		}
	}
}

func TestReports(t *testing.T) {
	r := New()
	r.Add("/b", Data, 2)
	r.Add("/a", Child, 3)
	r.Add("/a", Exist, 1)
	r.Add("/a", Persistent, 1)
	r.Add("/c", Child, 4)
	r.Add("/c/d", PersistentRecursive, 1)
	type row struct {
		path string
		w    WatcherID
		m    Mode
	}
	var rows []row
	r.Dump(func(p string, w WatcherID, m Mode) { rows = append(rows, row{p, w, m}) })
	want := []row{{"/a", 1, Exist | Persistent}, {"/a", 3, Child}, {"/b", 2, Data}, {"/c", 4, Child}, {"/c/d", 1, PersistentRecursive}}
	if !slices.Equal(rows, want) {
		t.Errorf("Dump = %v, want %v", rows, want)
	}
	// wchs: child-only pairs (3 on /a, 4 on /c) are not in ZooKeeper's data
	// manager.
	if s := r.Summary(); s != (Summary{Connections: 2, Paths: 3, Watches: 3}) {
		t.Errorf("Summary = %+v", s)
	}
	data, exist, child, pers, rec := r.WatchesOf(1)
	if data != nil || !slices.Equal(exist, []string{"/a"}) || child != nil ||
		!slices.Equal(pers, []string{"/a"}) || !slices.Equal(rec, []string{"/c/d"}) {
		t.Errorf("WatchesOf(1) = %v %v %v %v %v", data, exist, child, pers, rec)
	}
	r.Add("/z", Data, 1)
	r.Add("/m", Data, 1)
	if data, _, _, _, _ := r.WatchesOf(1); !slices.Equal(data, []string{"/m", "/z"}) {
		t.Errorf("WatchesOf(1) data = %v, want sorted", data)
	}
	if d, e, c, p, rr := r.WatchesOf(99); d != nil || e != nil || c != nil || p != nil || rr != nil {
		t.Error("WatchesOf(unknown) not empty")
	}
}
