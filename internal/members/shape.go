package members

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/forest"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// Shape is how an ensemble is arranged: Nodes servers, either in classic
// mode (one group, the leader sending to everyone: leader-centric, like
// Zab) or as a forest of Trees groups whose messages travel down trees of
// fan-out Children (the Giraffe paper's "t-c"). Its text form, String and
// ParseShape, is "classic-3" or "forest-9-3-3" (nodes, trees, children).
type Shape struct {
	Nodes    int  `json:"nodes"`
	Trees    int  `json:"trees"`    // groups (trees of the forest); unused when Classic
	Children int  `json:"children"` // most children of a server in a group's tree; unused when Classic
	Classic  bool `json:"classic"`
}

// ParseShape parses "classic-N" or "forest-N-T-C".
func ParseShape(s string) (Shape, error) {
	kind, rest, _ := strings.Cut(s, "-")
	var nums []int
	for _, f := range strings.Split(rest, "-") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return Shape{}, fmt.Errorf("shape %q: want classic-NODES or forest-NODES-TREES-CHILDREN", s)
		}
		nums = append(nums, n)
	}
	switch {
	case kind == "classic" && len(nums) == 1:
		return Shape{Nodes: nums[0], Classic: true}, nil
	case kind == "forest" && len(nums) == 3:
		return Shape{Nodes: nums[0], Trees: nums[1], Children: nums[2]}, nil
	}
	return Shape{}, fmt.Errorf("shape %q: want classic-NODES or forest-NODES-TREES-CHILDREN", s)
}

// String returns the form ParseShape reads.
func (s Shape) String() string {
	if s.Classic {
		return fmt.Sprintf("classic-%d", s.Nodes)
	}
	return fmt.Sprintf("forest-%d-%d-%d", s.Nodes, s.Trees, s.Children)
}

// OneGroup reports whether the ensemble votes as a single group: classic
// mode, or a forest of one tree.
func (s Shape) OneGroup() bool { return s.Classic || s.Trees <= 1 }

// Topology returns how a group's messages travel from its coordinator: a
// star in classic mode, a tree of fan-out Children otherwise.
func (s Shape) Topology() gpaxos.Topology {
	if s.Classic {
		return gpaxos.StarTopology{}
	}
	return gpaxos.TreeTopology{Fanout: s.Children}
}

// forestConfig is the forest of the shape (a classic ensemble's history
// replays into a forest of one tree).
func (s Shape) forestConfig() forest.Config {
	return forest.Config{Trees: max(s.Trees, 1), MaxChildren: max(s.Children, 1)}
}

// Voters returns the voting configuration of servers ids in an ensemble of
// shape s: one group per tree of the forest the servers build by joining
// in id order, each listed in the forest's heap order (coordinator
// first), so every server that computes it gets the same groups; one group
// of every server, in id order, when s is OneGroup.
func Voters(s Shape, ids []ID) (quorum.Config, error) {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	if s.OneGroup() {
		return quorum.Config{Groups: [][]quorum.ID{ids}}, nil
	}
	var ms []Member
	for _, id := range ids {
		ms = append(ms, Member{ID: id})
	}
	f, err := Static(ms).Forest(s)
	if err != nil {
		return quorum.Config{}, err
	}
	var v quorum.Config
	for k := 0; k < s.Trees; k++ {
		var g []quorum.ID
		for _, id := range f.Group(forest.Color(k)) {
			g = append(g, ID(id))
		}
		v.Groups = append(v.Groups, g)
	}
	return v, nil
}
