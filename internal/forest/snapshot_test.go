package forest

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// TestSnapshotRestoreBehavesTheSame: a restored forest is equal to the
// original and stays equal under the same later changes, which is what lets
// a server that received a view keep deriving the topology from changes.
func TestSnapshotRestoreBehavesTheSame(t *testing.T) {
	for si, sh := range paperShapes {
		f := mustNew(t, sh.cfg)
		h := newHistory(uint64(si), 150, false)
		for range 300 {
			if _, err := f.Apply(h.step(f)); err != nil {
				t.Fatal(err)
			}
		}
		g, err := Restore(f.Snapshot())
		if err != nil {
			t.Fatalf("%s: %v", sh.cfg, err)
		}
		if !sameForest(f, g) {
			t.Fatalf("%s: restored forest differs", sh.cfg)
		}
		for range 300 {
			ch := h.step(f)
			u1, err1 := f.Apply(ch)
			u2, err2 := g.Apply(ch)
			if err1 != nil || err2 != nil || !reflect.DeepEqual(u1, u2) {
				t.Fatalf("%s: %v: updates differ: %v %v / %v %v", sh.cfg, ch, u1, err1, u2, err2)
			}
		}
		if !sameForest(f, g) {
			t.Fatalf("%s: restored forest diverged", sh.cfg)
		}
	}
	empty := mustNew(t, Config{3, 3})
	g, err := Restore(empty.Snapshot())
	if err != nil || g.Len() != 0 {
		t.Fatalf("empty snapshot: %v %v", g, err)
	}
}

func TestRestoreRejectsBadSnapshots(t *testing.T) {
	base := grow(t, Config{3, 3}, 20).Snapshot()
	mutate := func(fn func(s *Snapshot)) Snapshot {
		var s Snapshot
		b, _ := json.Marshal(base)
		_ = json.Unmarshal(b, &s)
		fn(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		s    Snapshot
		want string
	}{
		{"bad config", mutate(func(s *Snapshot) { s.Trees = 0 }), "trees"},
		{"reserved id", mutate(func(s *Snapshot) { s.Servers[0].ID = None }), "reserved"},
		{"duplicate id", mutate(func(s *Snapshot) { s.Servers[1].ID = s.Servers[0].ID }), "twice"},
		{"color out of range", mutate(func(s *Snapshot) { s.Servers[0].Color = 3 }), "color"},
		{"parents length", mutate(func(s *Snapshot) { s.Servers[0].Parents = s.Servers[0].Parents[:2] }), "parents"},
		{"long address", mutate(func(s *Snapshot) { s.Servers[0].Addr = strings.Repeat("a", MaxAddrLen+1) }), "address"},
		{"position clash", mutate(func(s *Snapshot) { s.Servers[3].Position = s.Servers[0].Position }), "position"},
		{"position range", mutate(func(s *Snapshot) { s.Servers[0].Position = -1 }), "position"},
		{"unknown parent", mutate(func(s *Snapshot) { s.Servers[5].Parents[0] = 999 }), "parent"},
		{"self parent", mutate(func(s *Snapshot) { s.Servers[5].Parents[0] = s.Servers[5].ID }), "parent"},
		{"two roots", mutate(func(s *Snapshot) { s.Servers[5].Parents[1] = None }), "root"},
		{"no root", mutate(func(s *Snapshot) {
			for i := range s.Servers {
				if s.Servers[i].Parents[2] == None {
					s.Servers[i].Parents[2] = s.Servers[(i+1)%len(s.Servers)].ID
				}
			}
		}), "root"},
		{"cycle", mutate(func(s *Snapshot) {
			// In tree 1, 14 hangs below 5 (heap positions 4 and 1); make
			// 5 hang below 14 as well.
			s.Servers[4].Parents[1] = 14
		}), "reach"},
		{"recolor breaks balance", mutate(func(s *Snapshot) { s.Servers[0].Color = 1 }), ""},
	} {
		if _, err := Restore(tc.s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Restore error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

// FuzzRestore feeds Restore mutated snapshots: it must never panic, and
// whatever it accepts must be a valid forest that survives more changes.
func FuzzRestore(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint8(3), uint16(20), uint16(5))
	f.Add(uint64(2), uint8(9), uint8(9), uint16(40), uint16(0))
	f.Add(uint64(3), uint8(1), uint8(5), uint16(6), uint16(3))
	f.Fuzz(func(t *testing.T, seed uint64, trees, children uint8, n, edits uint16) {
		cfg := Config{Trees: 1 + int(trees)%9, MaxChildren: 1 + int(children)%9}
		fo, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for id := 1; id <= int(n)%60; id++ {
			if _, err := fo.Join(ServerID(id), ""); err != nil {
				t.Fatal(err)
			}
		}
		s := fo.Snapshot()
		rng := rand.New(rand.NewPCG(seed, 1))
		for range int(edits) % 8 {
			if len(s.Servers) == 0 {
				break
			}
			ss := &s.Servers[rng.IntN(len(s.Servers))]
			switch rng.IntN(5) {
			case 0:
				ss.ID = ServerID(rng.IntN(70))
			case 1:
				ss.Color = Color(rng.IntN(cfg.Trees + 1))
			case 2:
				ss.Position = rng.IntN(10) - 1
			case 3:
				if len(ss.Parents) > 0 {
					ss.Parents[rng.IntN(len(ss.Parents))] = ServerID(rng.IntN(70))
				}
			case 4:
				ss.Parents = ss.Parents[:rng.IntN(len(ss.Parents)+1)]
			}
		}
		g, err := Restore(s)
		if err != nil {
			return
		}
		if err := g.CheckInvariants(); err != nil {
			t.Fatalf("accepted an invalid snapshot: %v", err)
		}
		if _, err := g.Join(1000, ""); err != nil {
			t.Fatal(err)
		}
		if err := g.CheckInvariants(); err != nil {
			t.Fatalf("restored forest broke on a join: %v", err)
		}
	})
}
