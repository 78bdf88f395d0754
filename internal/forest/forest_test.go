package forest

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{1, 1}, true},
		{Config{9, 9}, true},
		{Config{MaxTrees, MaxChildrenLimit}, true},
		{Config{0, 3}, false},
		{Config{MaxTrees + 1, 3}, false},
		{Config{3, 0}, false},
		{Config{3, -1}, false},
		{Config{3, MaxChildrenLimit + 1}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
		if _, err := New(tc.cfg); (err == nil) != tc.ok {
			t.Errorf("%+v: New() = %v, want ok=%v", tc.cfg, err, tc.ok)
		}
	}
}

func TestConfigDisjoint(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		n    int
		want bool
	}{
		{Config{3, 3}, 1, true},
		{Config{3, 3}, 2, false}, // group 2 is empty: its tree has a foreign interior server
		{Config{3, 3}, 3, true},
		{Config{3, 3}, 4, true},
		{Config{3, 3}, 5, false}, // groups 2,2,1: the lone server holds 3 of the 4 others
		{Config{3, 3}, 38, false},
		{Config{3, 3}, 39, true}, // the paper's capacity t(1+c+c²)
		{Config{3, 3}, 40, true},
		{Config{3, 5}, 2, false},
		{Config{3, 5}, 3, true},
		{Config{3, 5}, 1000, true},
		{Config{5, 10}, 4, false},
		{Config{5, 10}, 1000, true},
		{Config{9, 9}, 100, true},
		{Config{9, 9}, 105, false},
		{Config{9, 9}, 819, true},
		{Config{1, 999}, 1000, true},
		{Config{1, 999}, 1001, true}, // one group: every interior server has its color
		{Config{4, 2}, 8, false},
	} {
		if got := tc.cfg.Disjoint(tc.n); got != tc.want {
			t.Errorf("%s.Disjoint(%d) = %v, want %v", tc.cfg, tc.n, got, tc.want)
		}
	}
}

// TestDisjointIsExact checks both directions of Config.Disjoint against the
// construction: the forest has no foreign interior server exactly when
// Disjoint says it can.
func TestDisjointIsExact(t *testing.T) {
	for _, sh := range append(slices.Clone(paperShapes), wideShapes...) {
		f := mustNew(t, sh.cfg)
		for n := 1; n <= 200; n++ {
			mustJoin(t, f, ServerID(n))
			foreign := 0
			for _, id := range f.Servers() {
				c, _ := f.Color(id)
				for _, k := range f.InteriorTrees(id) {
					if k != c {
						foreign++
					}
				}
			}
			if (foreign == 0) != sh.cfg.Disjoint(n) {
				t.Fatalf("%s n=%d: %d foreign interior roles, Disjoint = %v", sh.cfg, n, foreign, sh.cfg.Disjoint(n))
			}
		}
	}
}

func TestConfigCoreDepth(t *testing.T) {
	for _, tc := range []struct {
		c, g, want int
	}{
		{3, 0, 0}, {3, 1, 0}, {3, 2, 1}, {3, 4, 1}, {3, 5, 2}, {3, 13, 2}, {3, 14, 3},
		{9, 10, 1}, {9, 11, 2}, {9, 91, 2}, {9, 92, 3},
		{1, 5, 4},
		{999, 1000, 1},
	} {
		if got := (Config{Trees: 1, MaxChildren: tc.c}).CoreDepth(tc.g); got != tc.want {
			t.Errorf("c=%d CoreDepth(%d) = %d, want %d", tc.c, tc.g, got, tc.want)
		}
	}
}

func TestConfigGroupSizesAndOverflow(t *testing.T) {
	cfg := Config{3, 3}
	if got := cfg.GroupSizes(8); !slices.Equal(got, []int{2, 3, 3}) {
		t.Errorf("GroupSizes(8) = %v", got)
	}
	for _, tc := range []struct{ n, g, want int }{
		{5, 1, 1}, {5, 2, 0}, {8, 2, 1}, {8, 3, 0}, {2, 0, 1}, {1, 0, 0},
	} {
		if got := cfg.Overflow(tc.n, tc.g); got != tc.want {
			t.Errorf("Overflow(%d,%d) = %d, want %d", tc.n, tc.g, got, tc.want)
		}
	}
	if got := (Config{9, 9}).PaperCapacity(); got != 819 {
		t.Errorf("9-9 capacity %d, want 819", got)
	}
	if got := (Config{3, 5}).PaperCapacity(); got != 93 {
		t.Errorf("3-5 capacity %d, want 93", got)
	}
}

func TestJoinRejects(t *testing.T) {
	f := grow(t, Config{3, 3}, 5)
	before := f.Snapshot()
	for _, tc := range []struct {
		id   ServerID
		addr string
		want string
	}{
		{None, "", "reserved"},
		{3, "", "already a member"},
		{99, strings.Repeat("x", MaxAddrLen+1), "address"},
	} {
		if _, err := f.Join(tc.id, tc.addr); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Join(%d) error %v, want it to mention %q", tc.id, err, tc.want)
		}
	}
	if _, err := f.Leave(42); err == nil {
		t.Error("Leave of a non-member succeeded")
	}
	if _, err := f.Apply(Change{Op: 9, Server: 7}); err == nil {
		t.Error("Apply of an unknown op succeeded")
	}
	if !reflect.DeepEqual(before, f.Snapshot()) {
		t.Error("a rejected change modified the forest")
	}
}

func TestColorsRoundRobinOnJoin(t *testing.T) {
	f := mustNew(t, Config{3, 3})
	for id := ServerID(1); id <= 9; id++ {
		u := mustJoin(t, f, id)
		if want := Color((id - 1) % 3); u.Color != want {
			t.Fatalf("server %d got color %d, want %d", id, u.Color, want)
		}
		if c, _ := f.Color(id); c != u.Color {
			t.Fatalf("Color(%d) = %d, Update said %d", id, c, u.Color)
		}
	}
	if got := f.Addr(4); got != "10.0.0.4:2888" {
		t.Errorf("Addr(4) = %q", got)
	}
}

// TestAlgorithm1Cases walks the three cases of the paper's Figure 2 in one
// tree: (a) the first server of the tree's color becomes the root above the
// foreign root; (b) it becomes a child of the root while the root has room;
// (c) past that it goes one level down (the heap's next position), taking
// the place of a foreign child of a full parent.
func TestAlgorithm1Cases(t *testing.T) {
	f := mustNew(t, Config{2, 3})
	mustJoin(t, f, 1) // color 0; root of both trees
	if r, _ := f.Root(1); r != 1 {
		t.Fatalf("root of tree 1 is %d, want the only server", r)
	}
	u := mustJoin(t, f, 2) // color 1: case (a) in tree 1
	if r, _ := f.Root(1); r != 2 {
		t.Fatalf("case a: root of tree 1 is %d, want 2", r)
	}
	if p, _ := f.Parent(1, 1); p != 2 {
		t.Fatalf("case a: old root's parent is %d, want 2", p)
	}
	if want := []RootChange{{Tree: 1, From: 1, To: 2}}; !reflect.DeepEqual(u.Roots, want) {
		t.Fatalf("case a: Roots = %v, want %v", u.Roots, want)
	}
	if want := []Move{{Tree: 1, Server: 1, From: None, To: 2}}; !reflect.DeepEqual(u.Moves, want) {
		t.Fatalf("case a: Moves = %v, want %v", u.Moves, want)
	}
	// Servers 3..8: colors 0,1,0,1,0,1. In tree 1 the root 2 fills up with
	// 1 (foreign), 4, 6 (color 1), 3 (foreign)...
	for id := ServerID(3); id <= 8; id++ {
		mustJoin(t, f, id)
	}
	if got := f.Group(1); !slices.Equal(got, []ServerID{2, 4, 6, 8}) {
		t.Fatalf("group 1 heap = %v", got)
	}
	// Case (b): 4 and 6 are children of the root. Case (c): 8 sits at heap
	// position 3, below position 0 too (c=3: positions 1..3 are the
	// root's), so the root must have given up a foreign child for it.
	for _, id := range []ServerID{4, 6, 8} {
		if p, _ := f.Parent(1, id); p != 2 {
			t.Errorf("parent of %d in tree 1 is %d, want 2", id, p)
		}
	}
	mustJoin(t, f, 9)
	mustJoin(t, f, 10) // color 1, heap position 4: first child of position 1 (server 4)
	if p, _ := f.Parent(1, 10); p != 4 {
		t.Errorf("parent of 10 in tree 1 is %d, want 4 (heap position 1)", p)
	}
	if err := f.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestGroupIsHeapOrdered(t *testing.T) {
	f := grow(t, Config{3, 3}, 60)
	for i := 0; i < 20; i++ {
		mustLeave(t, f, f.Servers()[i*2%f.Len()])
	}
	for k := range 3 {
		g := f.Group(Color(k))
		if len(g) != f.GroupSize(Color(k)) {
			t.Fatalf("Group(%d) has %d servers, GroupSize %d", k, len(g), f.GroupSize(Color(k)))
		}
		if r, _ := f.Root(Color(k)); r != g[0] {
			t.Fatalf("root of tree %d is %d, Group starts with %d", k, r, g[0])
		}
		for i := 1; i < len(g); i++ {
			if p, _ := f.Parent(Color(k), g[i]); p != g[(i-1)/3] {
				t.Fatalf("tree %d: Group[%d]=%d has parent %d, want Group[%d]=%d", k, i, g[i], p, (i-1)/3, g[(i-1)/3])
			}
		}
	}
}

func TestClassicStar(t *testing.T) {
	const n = 50
	f := grow(t, Config{1, n - 1}, n)
	root, _ := f.Root(0)
	if got := len(f.Children(0, root)); got != n-1 || f.TreeHeight(0) != 1 {
		t.Fatalf("star root has %d children and height %d", got, f.TreeHeight(0))
	}
	u := mustLeave(t, f, root)
	// Every former child changes parent: the last server becomes the root,
	// the others its children.
	if len(u.Moves) != n-1 {
		t.Fatalf("root departure moved %d edges, want %d", len(u.Moves), n-1)
	}
	newRoot, _ := f.Root(0)
	if newRoot != n || len(f.Children(0, newRoot)) != n-2 {
		t.Fatalf("new root %d with %d children", newRoot, len(f.Children(0, newRoot)))
	}
	if want := []RootChange{{Tree: 0, From: root, To: n}}; !reflect.DeepEqual(u.Roots, want) {
		t.Fatalf("Roots = %v, want %v", u.Roots, want)
	}
}

func TestLeaveRebalancesGroups(t *testing.T) {
	f := grow(t, Config{3, 3}, 6) // colors 0,1,2,0,1,2
	u := mustLeave(t, f, 1)       // group 0 shrinks to 1: still within one
	if len(u.Recolors) != 0 || u.Color != 0 {
		t.Fatalf("first departure: %+v", u)
	}
	u = mustLeave(t, f, 4) // group 0 would be empty next to groups of 2
	want := []Recolor{{Server: 5, From: 1, To: 0}}
	if !reflect.DeepEqual(u.Recolors, want) {
		t.Fatalf("Recolors = %v, want %v (last of the lowest largest group)", u.Recolors, want)
	}
	if c, _ := f.Color(5); c != 0 {
		t.Fatalf("server 5 has color %d after recolor", c)
	}
	if r, _ := f.Root(0); r != 5 {
		t.Fatalf("root of tree 0 is %d, want the recolored server 5", r)
	}
	if sizes := f.GroupSizes(); !slices.Equal(sizes, []int{1, 1, 2}) {
		t.Fatalf("group sizes %v", sizes)
	}
	if err := f.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestBeyondDisjointness pins down what the construction does when the
// groups cannot hold every other server below themselves: the tree of a
// smaller group takes exactly Overflow servers below a single foreign host,
// whose group is otherwise untouched, and no server is interior in more than
// two trees.
func TestBeyondDisjointness(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		n   int
	}{
		{Config{3, 3}, 5}, {Config{3, 3}, 38}, {Config{9, 9}, 105}, {Config{9, 9}, 1000},
	} {
		f := grow(t, tc.cfg, tc.n)
		for k := range tc.cfg.Trees {
			var hosts []ServerID
			below := 0
			for _, id := range f.Servers() {
				if c, _ := f.Color(id); c != Color(k) && f.IsInterior(Color(k), id) {
					hosts = append(hosts, id)
					below += len(f.Children(Color(k), id))
				}
			}
			want := tc.cfg.Overflow(tc.n, f.GroupSize(Color(k)))
			if below != want || (want > 0) != (len(hosts) == 1) || len(hosts) > 1 {
				t.Errorf("%s n=%d tree %d: hosts %v hold %d servers, want one host holding %d", tc.cfg, tc.n, k, hosts, below, want)
			}
			for _, h := range hosts {
				if roles := f.InteriorTrees(h); len(roles) > 2 {
					t.Errorf("%s n=%d: host %d is interior in trees %v", tc.cfg, tc.n, h, roles)
				}
			}
		}
	}
}

// TestEmptyGroups covers n < t: the trees of empty groups hang from a
// foreign root, and the first server of such a color takes the root over.
func TestEmptyGroups(t *testing.T) {
	f := grow(t, Config{9, 9}, 3)
	for k := 3; k < 9; k++ {
		r, _ := f.Root(Color(k))
		if f.GroupSize(Color(k)) != 0 || len(f.Children(Color(k), r)) != 2 {
			t.Fatalf("tree %d of an empty group: root %d with children %v", k, r, f.Children(Color(k), r))
		}
	}
	mustJoin(t, f, 4)
	if r, _ := f.Root(3); r != 4 || len(f.Children(3, 4)) != 3 {
		t.Fatalf("tree 3 after its first server joined: root %d children %v", r, f.Children(3, 4))
	}
	// Every server is the root of its own tree, so it receives its own
	// copy of any message whatever else crashed.
	for _, id := range f.Servers() {
		c, _ := f.Color(id)
		if r, _ := f.Root(c); r != id {
			t.Fatalf("server %d of color %d is not the root of its tree", id, c)
		}
	}
	for _, id := range f.Servers() {
		mustLeave(t, f, id)
		if err := f.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	if f.Len() != 0 || !slices.Equal(f.Roots(), []ServerID{None, None, None, None, None, None, None, None, None}) {
		t.Fatalf("emptied forest: %v", f)
	}
}

func TestAccessorsAgree(t *testing.T) {
	f := grow(t, Config{3, 5}, 120)
	for _, id := range f.Servers() {
		var nb []ServerID
		for k := range 3 {
			kk := Color(k)
			kids := f.Children(kk, id)
			if !slices.IsSorted(kids) {
				t.Fatalf("Children not sorted: %v", kids)
			}
			desc, height := 0, 0
			for _, c := range kids {
				if p, _ := f.Parent(kk, c); p != id {
					t.Fatalf("child %d of %d names parent %d", c, id, p)
				}
				if f.Depth(kk, c) != f.Depth(kk, id)+1 {
					t.Fatalf("depth of child %d", c)
				}
				desc += 1 + f.Descendants(kk, c)
				height = max(height, 1+f.Height(kk, c))
				nb = append(nb, c)
			}
			if desc != f.Descendants(kk, id) || height != f.Height(kk, id) {
				t.Fatalf("server %d tree %d: desc %d height %d, accessors say %d %d", id, k, desc, height, f.Descendants(kk, id), f.Height(kk, id))
			}
			if f.IsInterior(kk, id) != (len(kids) > 0) {
				t.Fatalf("IsInterior(%d,%d) disagrees with Children", k, id)
			}
			if p, ok := f.Parent(kk, id); ok {
				nb = append(nb, p)
			}
		}
		slices.Sort(nb)
		if got := f.Neighbors(id); !slices.Equal(got, slices.Compact(nb)) {
			t.Fatalf("Neighbors(%d) = %v, want %v", id, got, slices.Compact(nb))
		}
	}
	if _, ok := f.Parent(7, 1); ok {
		t.Error("Parent in a tree that does not exist")
	}
	if f.Children(0, 5000) != nil || f.Contains(5000) || f.Addr(5000) != "" {
		t.Error("accessors answer for a non-member")
	}
}

func TestCloneIsIndependent(t *testing.T) {
	f := grow(t, Config{3, 3}, 40)
	g := f.Clone()
	if !sameForest(f, g) {
		t.Fatal("clone differs")
	}
	want := f.Snapshot()
	mustLeave(t, g, 7)
	mustJoin(t, g, 100)
	if !reflect.DeepEqual(want, f.Snapshot()) {
		t.Fatal("changing the clone changed the original")
	}
	// The clone and a fresh replay of the same history agree.
	mustLeave(t, f, 7)
	mustJoin(t, f, 100)
	if !sameForest(f, g) {
		t.Fatal("clone and original diverged under the same changes")
	}
	for _, x := range []*Forest{f, g} {
		if err := x.CheckInvariants(); err != nil {
			t.Fatal(err)
		}
	}
}
