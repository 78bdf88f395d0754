package client

import (
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestOneShotWatches checks each watch variant against the change that
// must fire it, with the event's type and path, and that it fires once.
func TestOneShotWatches(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	w := connect(t, []string{ts.addr}) // the writer
	ctx := ctxT(t)
	open := zkproto.OpenACLUnsafe
	cases := []struct {
		name   string
		setup  string // node created first, "" for none
		watch  func(path string) (<-chan Event, error)
		change func(path string) error
		want   zkproto.EventType
	}{
		{"getW/set", "x", func(p string) (<-chan Event, error) { _, _, ch, err := c.GetW(ctx, p); return ch, err },
			func(p string) error { _, err := w.Set(ctx, p, []byte("y"), AnyVersion); return err }, zkproto.EventNodeDataChanged},
		{"getW/delete", "x", func(p string) (<-chan Event, error) { _, _, ch, err := c.GetW(ctx, p); return ch, err },
			func(p string) error { return w.Delete(ctx, p, AnyVersion) }, zkproto.EventNodeDeleted},
		{"existsW/create", "", func(p string) (<-chan Event, error) { _, ch, err := c.ExistsW(ctx, p); return ch, err },
			func(p string) error { _, _, err := w.Create(ctx, p, nil, Persistent, open); return err }, zkproto.EventNodeCreated},
		{"existsW/set", "x", func(p string) (<-chan Event, error) { _, ch, err := c.ExistsW(ctx, p); return ch, err },
			func(p string) error { _, err := w.Set(ctx, p, nil, AnyVersion); return err }, zkproto.EventNodeDataChanged},
		{"childrenW/create child", "x", func(p string) (<-chan Event, error) { _, _, ch, err := c.ChildrenW(ctx, p); return ch, err },
			func(p string) error { _, _, err := w.Create(ctx, p+"/k", nil, Persistent, open); return err }, zkproto.EventNodeChildrenChanged},
		{"childrenW/delete", "x", func(p string) (<-chan Event, error) { _, _, ch, err := c.ChildrenW(ctx, p); return ch, err },
			func(p string) error { return w.Delete(ctx, p, AnyVersion) }, zkproto.EventNodeDeleted},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "/w" + string(rune('a'+i))
			if tc.setup != "" {
				mustCreate(t, w, path, tc.setup, Persistent)
			}
			ch, err := tc.watch(path)
			if err != nil || ch == nil {
				t.Fatalf("watch: %v", err)
			}
			noEvent(t, ch, "before the change")
			if err := tc.change(path); err != nil {
				t.Fatal(err)
			}
			ev := waitEvent(t, ch, "after the change")
			if ev.Type != tc.want || ev.Path != path || ev.State != StateConnected || ev.Err != nil || ev.Zxid <= 0 {
				t.Fatalf("event %+v, want %v on %s", ev, tc.want, path)
			}
			if _, ok := <-ch; ok {
				t.Fatal("one-shot watch delivered twice")
			}
		})
	}
}

// TestWatchSeenBeforeData is ZooKeeper's ordering guarantee: a client sees
// the event of a watched change before it sees the changed data.
func TestWatchSeenBeforeData(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	w := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/o", "0", Persistent)
	for i := range 50 {
		_, _, ch, err := c.GetW(ctx, "/o")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Set(ctx, "/o", []byte{byte(i)}, AnyVersion); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Sync(ctx, "/o"); err != nil {
			t.Fatal(err)
		}
		get := c.GetAsync("/o")
		<-get.Done()
		select {
		case ev := <-ch:
			if ev.Type != zkproto.EventNodeDataChanged {
				t.Fatalf("event %+v", ev)
			}
		default:
			t.Fatalf("round %d: the read completed before the watch event was delivered", i)
		}
	}
}

func TestSharedWatches(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/s", "", Persistent)
	_, _, a, _ := c.GetW(ctx, "/s")
	_, b, _ := c.ExistsW(ctx, "/s")
	_, _, k, _ := c.ChildrenW(ctx, "/s")
	if _, err := c.Set(ctx, "/s", []byte("1"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []<-chan Event{a, b} {
		if ev := waitEvent(t, ch, "data watch"); ev.Type != zkproto.EventNodeDataChanged {
			t.Fatalf("event %+v", ev)
		}
	}
	noEvent(t, k, "child watch on a data change")
	if err := c.Delete(ctx, "/s", AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, k, "child watch on delete"); ev.Type != zkproto.EventNodeDeleted {
		t.Fatalf("event %+v", ev)
	}
}

func TestPersistentWatches(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	w := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	open := zkproto.OpenACLUnsafe
	pw, err := c.AddWatch(ctx, "/p", false)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := c.AddWatch(ctx, "/p", true)
	if err != nil {
		t.Fatal(err)
	}
	if pw.Path() != "/p" || pw.Recursive() || !rw.Recursive() {
		t.Fatal("accessors")
	}
	steps := []func() error{
		func() error { _, _, err := w.Create(ctx, "/p", nil, Persistent, open); return err },
		func() error { _, _, err := w.Create(ctx, "/p/q", nil, Persistent, open); return err },
		func() error { _, err := w.Set(ctx, "/p/q", []byte("v"), AnyVersion); return err },
		func() error { _, err := w.Set(ctx, "/p", []byte("v"), AnyVersion); return err },
		func() error { return w.Delete(ctx, "/p/q", AnyVersion) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			t.Fatal(err)
		}
	}
	type pe struct {
		typ  zkproto.EventType
		path string
	}
	wantP := []pe{{zkproto.EventNodeCreated, "/p"}, {zkproto.EventNodeChildrenChanged, "/p"},
		{zkproto.EventNodeDataChanged, "/p"}, {zkproto.EventNodeChildrenChanged, "/p"}}
	wantR := []pe{{zkproto.EventNodeCreated, "/p"}, {zkproto.EventNodeCreated, "/p/q"},
		{zkproto.EventNodeDataChanged, "/p/q"}, {zkproto.EventNodeDataChanged, "/p"}, {zkproto.EventNodeDeleted, "/p/q"}}
	for name, tc := range map[string]struct {
		w    *PersistentWatch
		want []pe
	}{"persistent": {pw, wantP}, "recursive": {rw, wantR}} {
		for i, want := range tc.want {
			ev := waitEvent(t, tc.w.Events(), name)
			if ev.Type != want.typ || ev.Path != want.path {
				t.Fatalf("%s event %d: %+v, want %v", name, i, ev, want)
			}
		}
	}
	if err := pw.Remove(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, pw.Events(), "removed"); ev.Type != zkproto.EventPersistentWatchRemoved {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := <-pw.Events(); ok {
		t.Fatal("events after removal")
	}
	// The recursive watch is still there.
	if _, err := w.Set(ctx, "/p", []byte("w"), AnyVersion); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, rw.Events(), "recursive after removing the other"); ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("event %+v", ev)
	}
}

func TestRemoveWatches(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/rw", "", Persistent)
	_, _, data, _ := c.GetW(ctx, "/rw")
	_, _, kids, _ := c.ChildrenW(ctx, "/rw")
	if err := c.RemoveWatches(ctx, "/rw", zkproto.WatcherChildren); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, kids, "child removed"); ev.Type != zkproto.EventChildWatchRemoved || ev.Path != "/rw" {
		t.Fatalf("event %+v", ev)
	}
	noEvent(t, data, "data watch after removing child watches")
	if err := c.RemoveWatches(ctx, "/rw", zkproto.WatcherAny); err != nil {
		t.Fatal(err)
	}
	if ev := waitEvent(t, data, "data removed"); ev.Type != zkproto.EventDataWatchRemoved {
		t.Fatalf("event %+v", ev)
	}
	wantCode(t, "nothing left", c.RemoveWatches(ctx, "/rw", zkproto.WatcherAny), zkproto.ErrNoWatcher)
}
