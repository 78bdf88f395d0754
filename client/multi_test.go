package client

import (
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestMulti(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	open := zkproto.OpenACLUnsafe
	mustCreate(t, c, "/mu", "", Persistent)

	res, err := c.Multi(ctx,
		CreateOp("/mu/a", []byte("1"), Persistent, open),
		CreateOp("/mu/s-", nil, PersistentSequential, open),
		CreateOp("/mu/c", nil, Container, open),
		CreateTTLOp("/mu/t", nil, PersistentTTL, open, 60_000_000_000),
		CheckOp("/mu", 0),
		SetOp("/mu/a", []byte("2"), 0),
		CreateOp("/mu/gone", nil, Persistent, open),
		DeleteOp("/mu/gone", AnyVersion),
	)
	if err != nil {
		t.Fatal(err)
	}
	wantOps := []zkproto.OpCode{zkproto.OpCreate2, zkproto.OpCreate2, zkproto.OpCreateContainer, zkproto.OpCreateTTL,
		zkproto.OpCheck, zkproto.OpSetData, zkproto.OpCreate2, zkproto.OpDelete}
	if len(res) != len(wantOps) {
		t.Fatalf("%d results", len(res))
	}
	for i, r := range res {
		if r.Op != wantOps[i] || r.Err != nil {
			t.Fatalf("result %d: %+v", i, r)
		}
	}
	if res[0].Path != "/mu/a" || res[0].Stat == nil || res[1].Path != "/mu/s-0000000001" || res[5].Stat.Version != 1 {
		t.Fatalf("results: %+v", res)
	}
	if d, _, err := c.Get(ctx, "/mu/a"); err != nil || string(d) != "2" {
		t.Fatalf("after multi: %q %v", d, err)
	}

	// A failing op: nothing is applied; the op's own code, OK before it,
	// RUNTIMEINCONSISTENCY after it; the call's error is the op's code.
	res, err = c.Multi(ctx,
		CreateOp("/mu/b", nil, Persistent, open),
		CheckOp("/mu/a", 0),
		DeleteOp("/mu/a", AnyVersion),
	)
	if err != zkproto.ErrBadVersion {
		t.Fatalf("failed multi error %v", err)
	}
	wantErrs := []error{nil, zkproto.ErrBadVersion, zkproto.ErrRuntimeInconsistency}
	for i, r := range res {
		if r.Err != wantErrs[i] {
			t.Fatalf("result %d: %+v, want error %v", i, r, wantErrs[i])
		}
	}
	if st, err := c.Exists(ctx, "/mu/b"); err != nil || st != nil {
		t.Fatalf("failed multi applied a create: %v %v", st, err)
	}

	// An empty multi succeeds with no results.
	if res, err := c.Multi(ctx); err != nil || len(res) != 0 {
		t.Fatalf("empty multi: %+v %v", res, err)
	}
}

func TestMultiRead(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	mustCreate(t, c, "/r", "root", Persistent)
	mustCreate(t, c, "/r/x", "", Persistent)
	res, err := c.MultiRead(ctx, GetDataOp("/r"), GetChildrenOp("/missing"), GetChildrenOp("/r"))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || string(res[0].Data) != "root" || res[0].Stat == nil || res[0].Err != nil ||
		res[1].Err != zkproto.ErrNoNode || !slices.Equal(res[2].Children, []string{"x"}) {
		t.Fatalf("multiRead: %+v", res)
	}
}
