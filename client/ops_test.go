package client

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestCreateGetSetDelete(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	open := zkproto.OpenACLUnsafe

	p, st, err := c.Create(ctx, "/a", []byte("x"), Persistent, open)
	if err != nil || p != "/a" || st == nil || st.Version != 0 || st.DataLength != 1 || st.EphemeralOwner != 0 {
		t.Fatalf("create: %q %+v %v", p, st, err)
	}
	data, st2, err := c.Get(ctx, "/a")
	if err != nil || string(data) != "x" || *st2 != *st {
		t.Fatalf("get: %q %+v %v (create stat %+v)", data, st2, err, st)
	}
	st3, err := c.Set(ctx, "/a", []byte("yy"), 0)
	if err != nil || st3.Version != 1 || st3.DataLength != 2 || st3.Mzxid <= st.Mzxid {
		t.Fatalf("set: %+v %v", st3, err)
	}
	if ex, err := c.Exists(ctx, "/a"); err != nil || ex == nil || *ex != *st3 {
		t.Fatalf("exists: %+v %v", ex, err)
	}
	if ex, err := c.Exists(ctx, "/nope"); err != nil || ex != nil {
		t.Fatalf("exists on a missing node: %+v %v", ex, err)
	}
	for _, name := range []string{"c", "b"} {
		mustCreate(t, c, "/a/"+name, "", Persistent)
	}
	kids, pst, err := c.Children(ctx, "/a")
	slices.Sort(kids)
	if err != nil || !slices.Equal(kids, []string{"b", "c"}) || pst.NumChildren != 2 || pst.Cversion != 2 {
		t.Fatalf("children: %v %+v %v", kids, pst, err)
	}
	if err := c.Delete(ctx, "/a/b", 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/a/c", AnyVersion); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, "/a", 1); err != nil {
		t.Fatal(err)
	}
	if p, err := c.Sync(ctx, "/"); err != nil || p != "/" {
		t.Fatalf("sync: %q %v", p, err)
	}
}

// TestErrors checks that every server error comes back as the
// zkproto.Code, comparable with errors.Is and ==.
func TestErrors(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/e", "", Persistent)
	mustCreate(t, c, "/e/child", "", Persistent)
	mustCreate(t, c, "/eph", "", Ephemeral)
	open := zkproto.OpenACLUnsafe
	cases := []struct {
		name string
		run  func() error
		want zkproto.Code
	}{
		{"create existing", func() error { _, _, err := c.Create(ctx, "/e", nil, Persistent, open); return err }, zkproto.ErrNodeExists},
		{"create without parent", func() error { _, _, err := c.Create(ctx, "/x/y", nil, Persistent, open); return err }, zkproto.ErrNoNode},
		{"create under ephemeral", func() error { _, _, err := c.Create(ctx, "/eph/x", nil, Persistent, open); return err }, zkproto.ErrNoChildrenForEphemerals},
		{"create bad path", func() error { _, _, err := c.Create(ctx, "no-slash", nil, Persistent, open); return err }, zkproto.ErrBadArguments},
		{"create empty acl", func() error { _, _, err := c.Create(ctx, "/noacl", nil, Persistent, []zkproto.ACL{}); return err }, zkproto.ErrInvalidACL},
		{"create TTL mode without TTL", func() error { _, _, err := c.Create(ctx, "/ttl0", nil, PersistentTTL, open); return err }, zkproto.ErrBadArguments},
		{"get missing", func() error { _, _, err := c.Get(ctx, "/missing"); return err }, zkproto.ErrNoNode},
		{"set bad version", func() error { _, err := c.Set(ctx, "/e", nil, 7); return err }, zkproto.ErrBadVersion},
		{"set missing", func() error { _, err := c.Set(ctx, "/missing", nil, AnyVersion); return err }, zkproto.ErrNoNode},
		{"delete non-empty", func() error { return c.Delete(ctx, "/e", AnyVersion) }, zkproto.ErrNotEmpty},
		{"delete bad version", func() error { return c.Delete(ctx, "/e/child", 3) }, zkproto.ErrBadVersion},
		{"delete missing", func() error { return c.Delete(ctx, "/missing", AnyVersion) }, zkproto.ErrNoNode},
		{"children missing", func() error { _, _, err := c.Children(ctx, "/missing"); return err }, zkproto.ErrNoNode},
		{"getACL missing", func() error { _, _, err := c.GetACL(ctx, "/missing"); return err }, zkproto.ErrNoNode},
		{"setACL bad version", func() error { _, err := c.SetACL(ctx, "/e", open, 5); return err }, zkproto.ErrBadVersion},
		{"removeWatches none", func() error { return c.RemoveWatches(ctx, "/e", zkproto.WatcherData) }, zkproto.ErrNoWatcher},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run()
			wantCode(t, tc.name, err, tc.want)
			if code, ok := err.(zkproto.Code); !ok || code != tc.want {
				t.Fatalf("error %v (%T) is not the bare code %v", err, err, tc.want)
			}
		})
	}
	// Errors leave the session usable.
	if _, _, err := c.Get(ctx, "/e"); err != nil {
		t.Fatal(err)
	}
}

// TestCreateModes covers every create mode, through create2,
// createContainer and createTTL.
func TestCreateModes(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/m", "", Persistent)
	open := zkproto.OpenACLUnsafe
	// Container and TTL owners are hidden from clients: ZooKeeper's
	// DataNode.copyStat reports 0 for every owner that is not a session.
	cases := []struct {
		mode      CreateMode
		path      string
		ttl       time.Duration
		seq       bool
		ephemeral bool
		owner     func(int64) bool
	}{
		{mode: Persistent, path: "/m/p", owner: func(o int64) bool { return o == 0 }},
		{mode: Ephemeral, path: "/m/e", ephemeral: true, owner: func(o int64) bool { return o == c.SessionID() }},
		{mode: PersistentSequential, path: "/m/ps-", seq: true, owner: func(o int64) bool { return o == 0 }},
		{mode: EphemeralSequential, path: "/m/es-", seq: true, ephemeral: true, owner: func(o int64) bool { return o == c.SessionID() }},
		{mode: Container, path: "/m/c", owner: func(o int64) bool { return o == 0 }},
		{mode: PersistentTTL, path: "/m/t", ttl: time.Hour, owner: func(o int64) bool { return o == 0 }},
		{mode: PersistentSequentialTTL, path: "/m/ts-", ttl: time.Hour, seq: true, owner: func(o int64) bool { return o == 0 }},
	}
	for _, tc := range cases {
		var p string
		var st *zkproto.Stat
		var err error
		if tc.ttl > 0 {
			p, st, err = c.CreateTTL(ctx, tc.path, []byte("d"), tc.mode, open, tc.ttl)
		} else {
			p, st, err = c.Create(ctx, tc.path, []byte("d"), tc.mode, open)
		}
		if err != nil {
			t.Fatalf("mode %d: %v", tc.mode, err)
		}
		if !strings.HasPrefix(p, tc.path) || tc.seq && len(p) != len(tc.path)+10 || !tc.seq && p != tc.path {
			t.Fatalf("mode %d: path %q", tc.mode, p)
		}
		if !tc.owner(st.EphemeralOwner) {
			t.Fatalf("mode %d: ephemeralOwner %#x", tc.mode, st.EphemeralOwner)
		}
		if tc.mode.IsSequential() != tc.seq || tc.mode.IsEphemeral() != tc.ephemeral || tc.mode.IsTTL() != (tc.ttl > 0) {
			t.Fatalf("mode %d: predicates disagree", tc.mode)
		}
	}
	eph, err := c.GetEphemerals(ctx, "/m")
	slices.Sort(eph)
	if err != nil || len(eph) != 2 || eph[0] != "/m/e" || !strings.HasPrefix(eph[1], "/m/es-") {
		t.Fatalf("getEphemerals: %v %v", eph, err)
	}
	if n, err := c.GetAllChildrenNumber(ctx, "/m"); err != nil || n != int32(len(cases)) {
		t.Fatalf("getAllChildrenNumber: %d %v", n, err)
	}
}

func TestACLAndAuth(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	other := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	if err := c.AddAuth(ctx, "digest", []byte("alice:secret")); err != nil {
		t.Fatal(err)
	}
	who, err := c.WhoAmI(ctx)
	if err != nil || !slices.ContainsFunc(who, func(ci zkproto.ClientInfo) bool { return ci.AuthScheme == "digest" }) {
		t.Fatalf("whoAmI: %+v %v", who, err)
	}
	if _, _, err := c.Create(ctx, "/private", []byte("s"), Persistent, zkproto.CreatorAllACL); err != nil {
		t.Fatal(err)
	}
	acl, st, err := c.GetACL(ctx, "/private")
	if err != nil || len(acl) != 1 || acl[0].ID.Scheme != "digest" || !strings.HasPrefix(acl[0].ID.ID, "alice:") || acl[0].Perms != zkproto.PermAll {
		t.Fatalf("getACL: %+v %v", acl, err)
	}
	if _, _, err := other.Get(ctx, "/private"); err != zkproto.ErrNoAuth {
		t.Fatalf("other session read: %v", err)
	}
	st2, err := c.SetACL(ctx, "/private", zkproto.ReadACLUnsafe, st.Aversion)
	if err != nil || st2.Aversion != st.Aversion+1 {
		t.Fatalf("setACL: %+v %v", st2, err)
	}
	if d, _, err := other.Get(ctx, "/private"); err != nil || string(d) != "s" {
		t.Fatalf("read after setACL: %q %v", d, err)
	}
	if _, err := other.Set(ctx, "/private", nil, AnyVersion); err != zkproto.ErrNoAuth {
		t.Fatalf("write without WRITE: %v", err)
	}
}

// TestAuthFailedIsFinal: a rejected AddAuth ends the Conn in AuthFailed,
// as in ZooKeeper.
func TestAuthFailedIsFinal(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	wantCode(t, "bad scheme", c.AddAuth(ctx, "no-such-scheme", []byte("x")), zkproto.ErrAuthFailed)
	waitState(t, c, StateAuthFailed)
	_, _, err := c.Get(ctx, "/")
	wantCode(t, "get after auth failure", err, zkproto.ErrAuthFailed)
}

// TestWithAuth: credentials given at Connect are in force from the first
// request and again after a reconnection.
func TestWithAuth(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()}, WithAuth("digest", []byte("bob:pw")))
	ctx := ctxT(t)
	if _, _, err := c.Create(ctx, "/bob", []byte("b"), Persistent, zkproto.CreatorAllACL); err != nil {
		t.Fatal(err)
	}
	px.sever()
	waitState(t, c, StateDisconnected)
	waitState(t, c, StateConnected)
	if d, _, err := c.Get(ctx, "/bob"); err != nil || !bytes.Equal(d, []byte("b")) {
		t.Fatalf("read with replayed auth: %q %v", d, err)
	}
}

func TestRequestTooLarge(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr}, WithMaxPacketSize(1024))
	ctx := ctxT(t)
	before := c.GetAsync("/")
	_, err := c.Set(ctx, "/", make([]byte, 2048), AnyVersion)
	if err != ErrRequestTooLarge {
		t.Fatalf("got %v", err)
	}
	if _, err := before.Result(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Set(ctx, "/", make([]byte, 100), AnyVersion); err != nil {
		t.Fatal(err)
	}
}
