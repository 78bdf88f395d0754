package client

import (
	"github.com/giraffe-coord/giraffe/internal/zkpeer"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// startZooKeeper runs a standalone Apache ZooKeeper 3.9 with the peer
// scripts, as itest does, and skips when they are not set up (ZK_LIB is
// set by `make test`).
func startZooKeeper(t *testing.T) string {
	t.Helper()
	return zkpeer.Start(t, zkpeer.Options{})
}

// TestAgainstZooKeeper runs the core of the suite against Apache
// ZooKeeper 3.9: the client must work with the reference server too.
func TestAgainstZooKeeper(t *testing.T) {
	zk := startZooKeeper(t)
	px := newProxy(t, zk)
	c := connect(t, []string{px.addr()})
	w := connect(t, []string{zk})
	ctx := ctxT(t)
	open := zkproto.OpenACLUnsafe

	t.Run("ops", func(t *testing.T) {
		p, st, err := c.Create(ctx, "/z", []byte("x"), Persistent, open)
		if err != nil || p != "/z" || st.DataLength != 1 {
			t.Fatalf("create: %q %+v %v", p, st, err)
		}
		if p, _, err := c.Create(ctx, "/z/s-", nil, EphemeralSequential, open); err != nil || p != "/z/s-0000000000" {
			t.Fatalf("sequential: %q %v", p, err)
		}
		if _, _, err := c.Create(ctx, "/z/c", nil, Container, open); err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Create(ctx, "/z", nil, Persistent, open)
		wantCode(t, "duplicate", err, zkproto.ErrNodeExists)
		_, err = c.Set(ctx, "/z", nil, 9)
		wantCode(t, "bad version", err, zkproto.ErrBadVersion)
		wantCode(t, "not empty", c.Delete(ctx, "/z", AnyVersion), zkproto.ErrNotEmpty)
		if st, err := c.Exists(ctx, "/none"); st != nil || err != nil {
			t.Fatalf("exists: %v %v", st, err)
		}
		kids, st, err := c.Children(ctx, "/z")
		if err != nil || len(kids) != 2 || st.NumChildren != 2 {
			t.Fatalf("children: %v %+v %v", kids, st, err)
		}
		if acl, _, err := c.GetACL(ctx, "/z"); err != nil || len(acl) != 1 || acl[0].ID != zkproto.AnyoneID {
			t.Fatalf("acl: %+v %v", acl, err)
		}
		if _, err := c.Sync(ctx, "/z"); err != nil {
			t.Fatal(err)
		}
		if err := c.AddAuth(ctx, "digest", []byte("u:p")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("multi", func(t *testing.T) {
		res, err := c.Multi(ctx, CreateOp("/z/m", nil, Persistent, open), CheckOp("/z", 5))
		if err != zkproto.ErrBadVersion || len(res) != 2 || res[0].Err != nil || res[1].Err != zkproto.ErrBadVersion {
			t.Fatalf("failed multi: %+v %v", res, err)
		}
		res, err = c.Multi(ctx, CreateOp("/z/m", nil, Persistent, open), SetOp("/z/m", []byte("v"), 0))
		if err != nil || res[0].Path != "/z/m" || res[1].Stat.Version != 1 {
			t.Fatalf("multi: %+v %v", res, err)
		}
	})
	t.Run("watches and reconnect", func(t *testing.T) {
		_, _, data, err := c.GetW(ctx, "/z/m")
		if err != nil {
			t.Fatal(err)
		}
		_, created, _ := c.ExistsW(ctx, "/z/new")
		rec, err := c.AddWatch(ctx, "/z", true)
		if err != nil {
			t.Fatal(err)
		}
		sid := c.SessionID()
		px.setRefuse(true)
		px.sever()
		waitState(t, c, StateDisconnected)
		if _, err := w.Set(ctx, "/z/m", []byte("w"), AnyVersion); err != nil {
			t.Fatal(err)
		}
		px.setRefuse(false)
		waitState(t, c, StateConnected)
		if c.SessionID() != sid {
			t.Fatal("session changed")
		}
		if ev := waitEvent(t, data, "change while disconnected"); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/z/m" {
			t.Fatalf("event %+v", ev)
		}
		if _, _, err := w.Create(ctx, "/z/new", nil, Persistent, open); err != nil {
			t.Fatal(err)
		}
		if ev := waitEvent(t, created, "exist watch"); ev.Type != zkproto.EventNodeCreated {
			t.Fatalf("event %+v", ev)
		}
		// The notification setWatches caused for /z/m also reaches the
		// recursive watch on /z, as the Java client routes it.
		if ev := waitEvent(t, rec.Events(), "recursive watch, restored"); ev.Type != zkproto.EventNodeDataChanged || ev.Path != "/z/m" {
			t.Fatalf("event %+v", ev)
		}
		if ev := waitEvent(t, rec.Events(), "recursive watch after reconnect"); ev.Type != zkproto.EventNodeCreated || ev.Path != "/z/new" {
			t.Fatalf("event %+v", ev)
		}
	})
	t.Run("pipelined FIFO", func(t *testing.T) {
		var calls []*Call[*zkproto.Stat]
		for i := range 200 {
			calls = append(calls, c.SetAsync("/z/new", []byte{byte(i)}, int32(i)))
		}
		for i, cl := range calls {
			if st, err := cl.Result(); err != nil || st.Version != int32(i+1) {
				t.Fatalf("set %d: %+v %v", i, st, err)
			}
		}
	})
}
