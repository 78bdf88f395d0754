package members

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

func TestParseShape(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shape
		bad  bool
	}{
		{in: "classic-3", want: Shape{Nodes: 3, Classic: true}},
		{in: "classic-1", want: Shape{Nodes: 1, Classic: true}},
		{in: "forest-9-3-3", want: Shape{Nodes: 9, Trees: 3, Children: 3}},
		{in: "forest-1000-9-9", want: Shape{Nodes: 1000, Trees: 9, Children: 9}},
		{in: "", bad: true},
		{in: "classic", bad: true},
		{in: "classic-0", bad: true},
		{in: "classic-3-3", bad: true},
		{in: "forest-9-3", bad: true},
		{in: "forest-9-3-3-3", bad: true},
		{in: "forest-x-3-3", bad: true},
		{in: "forest-9--3", bad: true},
		{in: "star-3", bad: true},
		{in: "Classic-3", bad: true},
	} {
		got, err := ParseShape(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseShape(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseShape(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			continue
		}
		if got.String() != tc.in {
			t.Errorf("ParseShape(%q).String() = %q", tc.in, got.String())
		}
	}
}

func TestTopology(t *testing.T) {
	if _, ok := (Shape{Nodes: 3, Classic: true}).Topology().(gpaxos.StarTopology); !ok {
		t.Error("classic: want a star")
	}
	if got := (Shape{Nodes: 9, Trees: 3, Children: 4}).Topology(); got != (gpaxos.TreeTopology{Fanout: 4}) {
		t.Errorf("forest: got %#v, want a tree of fan-out 4", got)
	}
}

func ids(ns ...int) []ID {
	out := make([]ID, len(ns))
	for i, n := range ns {
		out[i] = ID(n)
	}
	return out
}

func seq(n int) []ID {
	out := make([]ID, n)
	for i := range out {
		out[i] = ID(i + 1)
	}
	return out
}

// TestVoters pins the groups of small ensembles: joins in id order take
// the smallest group, lowest color first, so server i lands in group
// (i-1) mod t, each group in join (heap) order.
func TestVoters(t *testing.T) {
	for _, tc := range []struct {
		shape string
		ids   []ID
		want  [][]ID
	}{
		{"classic-3", ids(3, 1, 2), [][]ID{ids(1, 2, 3)}},
		{"classic-1", ids(7), [][]ID{ids(7)}},
		{"forest-9-3-3", seq(9), [][]ID{ids(1, 4, 7), ids(2, 5, 8), ids(3, 6, 9)}},
		{"forest-5-3-3", ids(5, 4, 3, 2, 1), [][]ID{ids(1, 4), ids(2, 5), ids(3)}},
		{"forest-4-2-3", ids(40, 10, 30, 20), [][]ID{ids(10, 30), ids(20, 40)}},
		{"forest-3-1-3", seq(3), [][]ID{ids(1, 2, 3)}},
	} {
		s, err := ParseShape(tc.shape)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Voters(s, tc.ids)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got.Groups, tc.want) {
			t.Errorf("Voters(%s, %v) = %v, want %v", tc.shape, tc.ids, got.Groups, tc.want)
		}
	}
}

// TestVotersAreTheForestsGroups checks larger ensembles against the
// forest: every server votes in the group of its color, groups differ in
// size by at most one, and the coordinator (the tree's root) comes first.
func TestVotersAreTheForestsGroups(t *testing.T) {
	for _, tc := range []struct{ trees, children int }{{3, 3}, {3, 5}, {5, 10}, {9, 9}, {4, 2}} {
		for n := 1; n <= 60; n++ {
			s := Shape{Nodes: n, Trees: tc.trees, Children: tc.children}
			t.Run(fmt.Sprint(s), func(t *testing.T) {
				v, err := Voters(s, seq(n))
				if err != nil {
					t.Fatal(err)
				}
				f, err := Static(memberList(seq(n))).Forest(s)
				if err != nil {
					t.Fatal(err)
				}
				if len(v.Groups) != tc.trees || v.Total() != n {
					t.Fatalf("%d groups of %d servers in all, want %d of %d", len(v.Groups), v.Total(), tc.trees, n)
				}
				lo, hi := n, 0
				for g, members := range v.Groups {
					lo, hi = min(lo, len(members)), max(hi, len(members))
					for _, id := range members {
						if c, _ := f.Color(forest.ServerID(id)); int(c) != g {
							t.Errorf("server %d votes in group %d, has color %d", id, g, c)
						}
					}
					if root, _ := f.Root(forest.Color(g)); len(members) > 0 && forest.ServerID(members[0]) != root {
						t.Errorf("group %d starts with %d, its tree's root is %d", g, members[0], root)
					}
				}
				if hi-lo > 1 {
					t.Errorf("group sizes from %d to %d", lo, hi)
				}
			})
		}
	}
}

func memberList(ids []ID) []Member {
	var out []Member
	for _, id := range ids {
		out = append(out, Member{ID: id, Peer: fmt.Sprintf("127.0.0.1:%d", 3000+id)})
	}
	return out
}

func configOf(groups [][]ID) quorum.Config { return quorum.Config{Groups: groups} }
