package client

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/quick"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestParseServers(t *testing.T) {
	cases := []struct {
		in   []string
		want []string
		err  error
	}{
		{[]string{"a:1"}, []string{"a:1"}, nil},
		{[]string{"a", " b:2 "}, []string{"a:2181", "b:2"}, nil},
		{[]string{"a:1,b:2", ""}, []string{"a:1", "b:2"}, nil},
		{[]string{"[::1]:5", "::1"}, []string{"[::1]:5", "[::1]:2181"}, nil},
		{nil, nil, ErrNoServers},
		{[]string{" , "}, nil, ErrNoServers},
	}
	for _, tc := range cases {
		got, err := parseServers(tc.in, false)
		if err != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("parseServers(%q) = %q, %v; want %q, %v", tc.in, got, err, tc.want, tc.err)
		}
	}
	in := []string{"a:1", "b:1", "c:1", "d:1", "e:1"}
	got, _ := parseServers(in, true)
	slices.Sort(got)
	if !slices.Equal(got, in) {
		t.Fatalf("shuffle changed the set: %q", got)
	}
}

// TestFlushOrderProperty: whatever order results become known in, calls
// complete in submission order, and only once every earlier call has.
func TestFlushOrderProperty(t *testing.T) {
	prop := func(seed uint64, n uint8) bool {
		r := rand.New(rand.NewPCG(seed, 1))
		c := &Conn{}
		calls := make([]*call, int(n)%64+1)
		for i := range calls {
			calls[i] = &call{done: make(chan struct{})}
			c.pending = append(c.pending, calls[i])
		}
		completed := 0
		for _, i := range r.Perm(len(calls)) {
			calls[i].finish(nil)
			c.flushReadyLocked()
			// The completed calls are exactly a prefix of the ready ones.
			k := 0
			for k < len(calls) && isClosed(calls[k].done) {
				k++
			}
			for j := k; j < len(calls); j++ {
				if isClosed(calls[j].done) {
					return false
				}
			}
			for j := 0; j < k; j++ {
				if !calls[j].ready {
					return false
				}
			}
			if k < len(calls) && calls[k].ready || k < completed {
				return false
			}
			completed = k
		}
		return completed == len(calls) && len(c.pending) == 0
	}
	if err := quick.Check(prop, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestTriggerRouting checks which client watchers a notification reaches,
// following ZKWatchManager.materialize.
func TestTriggerRouting(t *testing.T) {
	type reg struct {
		kind string // data, exist, child, persistent, recursive
		path string
	}
	regs := []reg{
		{"data", "/a/b"}, {"exist", "/a/b"}, {"child", "/a/b"}, {"child", "/a"},
		{"persistent", "/a/b"}, {"persistent", "/a"}, {"recursive", "/a"}, {"recursive", "/"}, {"recursive", "/a/b/c"},
	}
	cases := []struct {
		typ  zkproto.EventType
		path string
		want []int // indexes into regs that fire
	}{
		{zkproto.EventNodeDataChanged, "/a/b", []int{0, 1, 4, 6, 7}},
		{zkproto.EventNodeCreated, "/a/b", []int{0, 1, 4, 6, 7}},
		{zkproto.EventNodeChildrenChanged, "/a/b", []int{2, 4}},
		{zkproto.EventNodeChildrenChanged, "/a", []int{3, 5}},
		{zkproto.EventNodeDeleted, "/a/b", []int{0, 1, 2, 4, 6, 7}},
		{zkproto.EventNodeDataChanged, "/a/b/c/d", []int{6, 7, 8}},
		{zkproto.EventNone, "/a/b", nil},
	}
	for _, tc := range cases {
		c := &Conn{abort: make(chan struct{}), watches: newWatchRegistry()}
		chans := make([]<-chan Event, len(regs))
		for i, r := range regs {
			switch r.kind {
			case "data", "exist", "child":
				k := map[string]watchKind{"data": watchData, "exist": watchExist, "child": watchChild}[r.kind]
				ch := newWatchChan()
				c.watches.addOneShot(k, r.path, ch)
				chans[i] = ch
			default:
				w := &PersistentWatch{c: c, path: r.path, recursive: r.kind == "recursive", p: &pump[Event]{}}
				c.watches.addPersistent(w)
				chans[i] = nil
				defer func(i int) {
					if got := len(w.p.q); got != boolInt(slices.Contains(tc.want, i)) {
						t.Errorf("%v %s: %s watch on %s got %d events", tc.typ, tc.path, r.kind, r.path, got)
					}
				}(i)
			}
		}
		c.watches.trigger(zkproto.WatcherEvent{Type: tc.typ, State: zkproto.StateSyncConnected, Path: tc.path}, 7)
		for i, ch := range chans {
			if ch == nil {
				continue
			}
			fired := false
			select {
			case ev := <-ch:
				fired = ev.Path == tc.path && ev.Type == tc.typ && ev.Zxid == 7
			default:
			}
			if fired != slices.Contains(tc.want, i) {
				t.Errorf("%v %s: %s watch on %s fired=%v", tc.typ, tc.path, regs[i].kind, regs[i].path, fired)
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestSetWatchesBatching: many watches are restored in several requests,
// each under the size bound, together holding every path once; v2 (105)
// is used only with persistent watches.
func TestSetWatchesBatching(t *testing.T) {
	r := newWatchRegistry()
	want := map[string]bool{}
	long := strings.Repeat("x", 1000)
	for i := range 400 {
		p := "/" + long + "/" + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		r.addOneShot(watchKind(i%3), p, newWatchChan())
		want[p] = true
	}
	calls := r.setWatchesCalls(42)
	if len(calls) < 3 {
		t.Fatalf("%d setWatches requests for 400 KB of paths", len(calls))
	}
	got := map[string]bool{}
	for _, cl := range calls {
		if cl.op != zkproto.OpSetWatches || cl.xid != zkproto.XidSetWatches || !cl.internal {
			t.Fatalf("call %+v", cl)
		}
		d := zkproto.NewDecoder(cl.frame[4:])
		var h zkproto.RequestHeader
		var sw zkproto.SetWatches
		if h.Decode(d) != nil || sw.Decode(d) != nil || h.Xid != zkproto.XidSetWatches || sw.RelativeZxid != 42 {
			t.Fatalf("undecodable setWatches")
		}
		if sw.DataWatches == nil || sw.ExistWatches == nil || sw.ChildWatches == nil {
			t.Fatal("null list in setWatches")
		}
		size := 0
		for _, l := range [][]string{sw.DataWatches, sw.ExistWatches, sw.ChildWatches} {
			for _, p := range l {
				size += len(p)
				if got[p] {
					t.Fatalf("%s restored twice", p)
				}
				got[p] = true
			}
		}
		if size > setWatchesMaxBytes {
			t.Fatalf("batch of %d bytes", size)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("restored %d of %d watches", len(got), len(want))
	}
	r.addPersistent(&PersistentWatch{path: "/p", recursive: true})
	calls = r.setWatchesCalls(1)
	if calls[0].op != zkproto.OpSetWatches2 {
		t.Fatalf("persistent watches need setWatches2, got %v", calls[0].op)
	}
	empty := newWatchRegistry()
	if calls := empty.setWatchesCalls(1); len(calls) != 0 {
		t.Fatal("setWatches with no watches")
	}
}

func TestStateNames(t *testing.T) {
	for s, name := range map[State]string{StateDisconnected: "Disconnected", StateConnected: "SyncConnected",
		StateConnectedReadOnly: "ConnectedReadOnly", StateAuthFailed: "AuthFailed", StateExpired: "Expired",
		StateClosed: "Closed", State(99): "state(99)"} {
		if s.String() != name {
			t.Errorf("%d: %q", int32(s), s.String())
		}
	}
	if !StateExpired.Final() || StateDisconnected.Final() {
		t.Fatal("Final")
	}
}
