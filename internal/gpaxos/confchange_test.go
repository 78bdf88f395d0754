package gpaxos

import (
	"errors"
	"math/rand"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

func TestApplyConfChange(t *testing.T) {
	c := grid(2, 2) // [[1 2] [3 4]]
	got, err := ApplyConfChange(c, ConfChange{Op: ConfAddServer, Server: 5, Group: 1})
	if err != nil || !slices.Equal(got.Groups[1], []ID{3, 4, 5}) || len(c.Groups[1]) != 2 {
		t.Fatalf("add: %v %v (original %v)", got, err, c)
	}
	got, err = ApplyConfChange(c, ConfChange{Op: ConfRemoveServer, Server: 1})
	if err != nil || !slices.Equal(got.Groups[0], []ID{2}) {
		t.Fatalf("remove: %v %v", got, err)
	}
	for _, bad := range []ConfChange{
		{Op: ConfAddServer, Server: 3, Group: 0},    // already votes
		{Op: ConfAddServer, Server: 9, Group: 2},    // no such group
		{Op: ConfRemoveServer, Server: 9},           // not a voter
		{Op: 7, Server: 1},                          // unknown op
		{Op: ConfAddServer, Server: None, Group: 0}, // no id
	} {
		if _, err := ApplyConfChange(c, bad); !errors.Is(err, ErrBadConfChange) {
			t.Errorf("%v: err = %v, want ErrBadConfChange", bad, err)
		}
	}
	one := quorum.Config{Groups: [][]ID{{1}, {2, 3}}}
	if _, err := ApplyConfChange(one, ConfChange{Op: ConfRemoveServer, Server: 1}); !errors.Is(err, ErrBadConfChange) {
		t.Errorf("removing the last member of a group: %v", err)
	}
}

func TestConfEntryRoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for i := 0; i < 200; i++ {
		var c quorum.Config
		for g := r.Intn(5); g >= 0; g-- {
			var m []ID
			for k := r.Intn(6); k > 0; k-- {
				m = append(m, ID(r.Uint64()>>r.Intn(64)))
			}
			c.Groups = append(c.Groups, m)
		}
		ctx := make([]byte, r.Intn(10))
		r.Read(ctx)
		got, gotCtx, err := DecodeConfEntry(EncodeConfEntry(c, ctx))
		if err != nil || ConfigHash(got) != ConfigHash(c) || string(gotCtx) != string(ctx) {
			t.Fatalf("round trip of %v %x: %v %x %v", c, ctx, got, gotCtx, err)
		}
	}
}

// FuzzDecodeConfEntry: configuration entries come from the log and from
// peers; a malformed one is an error, never a panic.
func FuzzDecodeConfEntry(f *testing.F) {
	f.Add(EncodeConfEntry(grid(3, 3), []byte("ctx")))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{2, 1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, _, err := DecodeConfEntry(b)
		if err == nil {
			again, _, err := DecodeConfEntry(EncodeConfEntry(c, nil))
			if err != nil || ConfigHash(again) != ConfigHash(c) {
				t.Fatalf("re-encoding %v: %v", c, err)
			}
		}
	})
}

// TestConfChangeThroughLog adds a server to a running forest and removes
// another: the change commits, every server (the new one after catching up)
// uses the new configuration, writes keep committing, and the removed
// server drops out. A change is refused while another is pending and on a
// server that does not lead.
func TestConfChangeThroughLog(t *testing.T) {
	nw := newNet(t, grid(3, 3), TreeTopology{Fanout: 3})
	nw.tick(40)
	gl := nw.leader()
	if gl == nil {
		t.Fatal("no leader")
	}
	for _, id := range nw.order {
		if n := nw.nodes[id]; n != gl {
			if err := n.ProposeConfChange(ConfChange{Op: ConfRemoveServer, Server: 9}, nil); !errors.Is(err, ErrNotLeader) {
				t.Fatalf("follower accepted a change: %v", err)
			}
			break
		}
	}
	nw.tick(5) // the leader's no-op commits
	add := ConfChange{Op: ConfAddServer, Server: 10, Group: 2}
	if err := gl.ProposeConfChange(add, []byte("addr of 10")); err != nil {
		t.Fatal(err)
	}
	if err := gl.ProposeConfChange(ConfChange{Op: ConfRemoveServer, Server: 9}, nil); !errors.Is(err, ErrConfChangePending) {
		t.Fatalf("second change while one is pending: %v", err)
	}
	// The new server starts empty, with the configuration that adds it.
	newCfg, _ := ApplyConfChange(grid(3, 3), add)
	// Until the leader appends the change, it is queued there only.
	if q, ok := gl.QueuedVoters(); !ok || ConfigHash(q) != ConfigHash(newCfg) || ConfigHash(gl.Voters()) == ConfigHash(newCfg) {
		t.Fatalf("queued at the leader: %v, %v; voters %v", q, ok, gl.Voters())
	}
	r := rand.New(rand.NewSource(10))
	n10, err := NewNode(Config{ID: 10, Voters: newCfg, Topology: TreeTopology{Fanout: 3}, HeartbeatTicks: 2, ElectionTicks: 10, Rand: r.Intn})
	if err != nil {
		t.Fatal(err)
	}
	nw.nodes[10], nw.order = n10, append(nw.order, 10)
	nw.tick(10)
	for _, id := range nw.order {
		if v := nw.nodes[id].Voters(); ConfigHash(v) != ConfigHash(newCfg) {
			t.Fatalf("server %d uses %v, want %v", id, v, newCfg)
		}
		if _, ok := nw.nodes[id].QueuedVoters(); ok {
			t.Fatalf("server %d still reports a queued change", id)
		}
	}
	for i := 0; i < 5; i++ {
		if err := gl.Propose([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	nw.tick(5)
	if got := nw.payloads(10); len(got) != 5 {
		t.Fatalf("the added server applied %d writes, want 5", len(got))
	}
	victim := ID(9)
	if victim == gl.ID() {
		victim = 8
	}
	if err := gl.ProposeConfChange(ConfChange{Op: ConfRemoveServer, Server: victim}, nil); err != nil {
		t.Fatal(err)
	}
	nw.tick(10)
	if v := gl.Voters(); v.GroupOf(victim) >= 0 {
		t.Fatalf("server %d still votes in %v", victim, v)
	}
	st := nw.nodes[victim].Status()
	if st.Leader || st.Coordinator {
		t.Fatalf("removed server %d kept a role: %+v", victim, st)
	}
	if err := gl.Propose([]byte("after")); err != nil {
		t.Fatal(err)
	}
	nw.tick(5)
	if got := nw.payloads(10); len(got) != 6 {
		t.Fatalf("after the removal the added server applied %d writes, want 6", len(got))
	}
}
