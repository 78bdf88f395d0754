package watch

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// zkModel restates, as plainly as possible, how ZooKeeper 3.9 keeps watches:
// DataTree has two WatchManagers (data and child); each maps (path, watcher)
// to a set of WatcherModes {STANDARD, PERSISTENT, PERSISTENT_RECURSIVE}; the
// tree calls them as DataTree.createNode/deleteNode/setData,
// addWatch/getData/statNode/getChildren, removeWatch and containsWatcher do.
// The registry under test must be indistinguishable from it.
type zkModel struct {
	data, child map[modelKey]uint8
}

type modelKey struct {
	path string
	w    WatcherID
}

const (
	zkStandard  uint8 = 1
	zkPersist   uint8 = 2
	zkRecursive uint8 = 4
)

func newModel() *zkModel {
	return &zkModel{data: map[modelKey]uint8{}, child: map[modelKey]uint8{}}
}

func (z *zkModel) add(path string, m Mode, w WatcherID) {
	k := modelKey{path, w}
	switch m {
	case Data, Exist:
		z.data[k] |= zkStandard
	case Child:
		z.child[k] |= zkStandard
	case Persistent:
		z.data[k] |= zkPersist
		z.child[k] |= zkPersist
	case PersistentRecursive:
		z.data[k] |= zkRecursive
	}
}

func isAncestor(anc, path string) bool {
	if anc == path {
		return false
	}
	if anc == "/" {
		return strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, anc+"/")
}

// triggerManager is WatchManager.triggerWatch: every watcher on the path
// fires and loses STANDARD; recursive watchers on ancestors fire.
func triggerManager(mgr map[modelKey]uint8, path string) map[WatcherID]bool {
	told := map[WatcherID]bool{}
	for k, st := range mgr {
		switch {
		case k.path == path:
			told[k.w] = true
			if st &^= zkStandard; st == 0 {
				delete(mgr, k)
			} else {
				mgr[k] = st
			}
		case st&zkRecursive != 0 && isAncestor(k.path, path):
			told[k.w] = true
		}
	}
	return told
}

func (z *zkModel) trigger(typ zkproto.EventType, path string) []WatcherID {
	var told map[WatcherID]bool
	switch typ {
	case created, changed:
		told = triggerManager(z.data, path)
	case children:
		told = triggerManager(z.child, path)
	case deleted:
		told = triggerManager(z.data, path)
		for w := range triggerManager(z.child, path) { // minus those already told
			told[w] = true
		}
	}
	var ws []WatcherID
	for w := range told {
		ws = append(ws, w)
	}
	slices.Sort(ws)
	return ws
}

// removeMode is WatchManager.removeWatcher(path, watcher, mode); all means
// mode == null.
func removeMode(mgr map[modelKey]uint8, k modelKey, bits uint8) bool {
	old, ok := mgr[k]
	if !ok || old&bits == 0 {
		return false
	}
	if old&^bits == 0 {
		delete(mgr, k)
	} else {
		mgr[k] = old &^ bits
	}
	return true
}

func (z *zkModel) remove(path string, typ zkproto.WatcherType, w WatcherID) zkproto.Code {
	k := modelKey{path, w}
	removed := false
	switch typ {
	case zkproto.WatcherChildren:
		removed = removeMode(z.child, k, zkStandard)
	case zkproto.WatcherData:
		removed = removeMode(z.data, k, zkStandard)
	case zkproto.WatcherPersistent:
		a := removeMode(z.child, k, zkPersist)
		b := removeMode(z.data, k, zkPersist)
		removed = a || b
	case zkproto.WatcherPersistentRecursive:
		removed = removeMode(z.data, k, zkRecursive)
	case zkproto.WatcherAny:
		a := removeMode(z.child, k, 0xff)
		b := removeMode(z.data, k, 0xff)
		removed = a || b
	default:
		return zkproto.ErrMarshallingError
	}
	if !removed {
		return zkproto.ErrNoWatcher
	}
	return zkproto.OK
}

func (z *zkModel) check(path string, typ zkproto.WatcherType, w WatcherID) zkproto.Code {
	k := modelKey{path, w}
	var has bool
	switch typ {
	case zkproto.WatcherChildren:
		has = z.child[k]&zkStandard != 0
	case zkproto.WatcherData:
		has = z.data[k]&zkStandard != 0
	case zkproto.WatcherPersistent:
		has = z.data[k]&zkPersist != 0
	case zkproto.WatcherPersistentRecursive:
		has = z.data[k]&zkRecursive != 0
	case zkproto.WatcherAny:
		has = z.child[k] != 0 || z.data[k] != 0
	default:
		return zkproto.ErrMarshallingError
	}
	if !has {
		return zkproto.ErrNoWatcher
	}
	return zkproto.OK
}

func (z *zkModel) removeWatcher(w WatcherID) {
	for _, mgr := range []map[modelKey]uint8{z.data, z.child} {
		for k := range mgr {
			if k.w == w {
				delete(mgr, k)
			}
		}
	}
}

func (z *zkModel) paths() int {
	ps := map[string]bool{}
	for k := range z.data {
		ps[k.path] = true
	}
	for k := range z.child {
		ps[k.path] = true
	}
	return len(ps)
}

func (z *zkModel) summary() Summary {
	ws, ps := map[WatcherID]bool{}, map[string]bool{}
	for k := range z.data {
		ws[k.w], ps[k.path] = true, true
	}
	return Summary{Connections: len(ws), Paths: len(ps), Watches: len(z.data)}
}

// TestAgainstZooKeeperModel drives the registry and the model with the same
// random operations and compares every answer.
func TestAgainstZooKeeperModel(t *testing.T) {
	paths := []string{"/", "/a", "/a/b", "/a/b/c", "/ab", "/b", "/b/a"}
	modes := []Mode{Data, Exist, Child, Persistent, PersistentRecursive}
	events := []zkproto.EventType{created, deleted, changed, children, zkproto.EventNone}
	types := []zkproto.WatcherType{zkproto.WatcherChildren, zkproto.WatcherData, zkproto.WatcherAny,
		zkproto.WatcherPersistent, zkproto.WatcherPersistentRecursive, 0, 9}
	for seed := uint64(0); seed < 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x77617463))
		r, z := New(), newModel()
		var out []Delivery
		for step := 0; step < 400; step++ {
			path := paths[rng.IntN(len(paths))]
			w := WatcherID(rng.IntN(4) + 1)
			switch op := rng.IntN(20); {
			case op < 8:
				m := modes[rng.IntN(len(modes))]
				r.Add(path, m, w)
				z.add(path, m, w)
			case op < 14:
				typ := events[rng.IntN(len(events))]
				ev := Event{Type: typ, Path: path, Zxid: int64(step)}
				out = r.Trigger(ev, out[:0])
				var got []WatcherID
				for _, d := range out {
					if d.Event != ev {
						t.Fatalf("seed %d step %d: delivery %+v", seed, step, d)
					}
					got = append(got, d.Watcher)
				}
				if want := z.trigger(typ, path); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d: %v on %s told %v, ZooKeeper tells %v", seed, step, typ, path, got, want)
				}
			case op < 17:
				typ := types[rng.IntN(len(types))]
				if got, want := r.Remove(path, typ, w), z.remove(path, typ, w); got != want {
					t.Fatalf("seed %d step %d: Remove(%s, %d, %d) = %v, ZooKeeper %v", seed, step, path, typ, w, got, want)
				}
			case op < 19:
				typ := types[rng.IntN(len(types))]
				if got, want := r.Check(path, typ, w), z.check(path, typ, w); got != want {
					t.Fatalf("seed %d step %d: Check(%s, %d, %d) = %v, ZooKeeper %v", seed, step, path, typ, w, got, want)
				}
			default:
				r.RemoveWatcher(w)
				z.removeWatcher(w)
			}
			checkInvariants(t, r)
			if got, want := r.Count(), len(z.data)+len(z.child); got != want {
				t.Fatalf("seed %d step %d: Count %d, ZooKeeper %d", seed, step, got, want)
			}
			if got, want := r.Paths(), z.paths(); got != want {
				t.Fatalf("seed %d step %d: Paths %d, model %d", seed, step, got, want)
			}
			if got, want := r.Summary(), z.summary(); got != want {
				t.Fatalf("seed %d step %d: Summary %+v, model %+v", seed, step, got, want)
			}
		}
		compareWatchesOf(t, r, z)
	}
}

// compareWatchesOf checks WatchesOf against the model: data and exist
// together are the data manager's STANDARD entries.
func compareWatchesOf(t *testing.T, r *Registry, z *zkModel) {
	t.Helper()
	for w := WatcherID(1); w <= 4; w++ {
		data, exist, child, pers, rec := r.WatchesOf(w)
		var wantStd, wantChild, wantPers, wantRec []string
		for k, st := range z.data {
			if k.w != w {
				continue
			}
			if st&zkStandard != 0 {
				wantStd = append(wantStd, k.path)
			}
			if st&zkPersist != 0 {
				wantPers = append(wantPers, k.path)
			}
			if st&zkRecursive != 0 {
				wantRec = append(wantRec, k.path)
			}
		}
		for k, st := range z.child {
			if k.w == w && st&zkStandard != 0 {
				wantChild = append(wantChild, k.path)
			}
		}
		std := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(data), exist...))))
		for _, l := range [][]string{wantStd, wantChild, wantPers, wantRec} {
			slices.Sort(l)
		}
		if !slices.Equal(std, wantStd) || !slices.Equal(child, wantChild) ||
			!slices.Equal(pers, wantPers) || !slices.Equal(rec, wantRec) {
			t.Fatalf("WatchesOf(%d) = %v %v %v %v %v; model std %v child %v pers %v rec %v",
				w, data, exist, child, pers, rec, wantStd, wantChild, wantPers, wantRec)
		}
	}
}
