package quorum

import (
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"
)

// testConfig is a random configuration of up to 6 groups of up to 7 servers
// with distinct ids, generated for testing/quick.
type testConfig struct{ Config }

func (testConfig) Generate(r *rand.Rand, _ int) reflect.Value {
	var c Config
	next := ID(1)
	for g := r.Intn(6) + 1; g > 0; g-- {
		var members []ID
		for n := r.Intn(8); n > 0; n-- {
			members = append(members, next)
			next++
		}
		c.Groups = append(c.Groups, members)
	}
	return reflect.ValueOf(testConfig{c})
}

// subset picks the members of c selected by the bits of mask.
func subset(c Config, mask uint64) map[ID]bool {
	s := map[ID]bool{}
	i := 0
	for _, g := range c.Groups {
		for _, id := range g {
			if mask&(1<<uint(i%64)) != 0 {
				s[id] = true
			}
			i++
		}
	}
	return s
}

// refIsQuorum is the definition, written as plainly as possible: count
// members per group, sum the sizes of groups with a strict majority.
func refIsQuorum(c Config, s map[ID]bool) bool {
	total, won := 0, 0
	for _, g := range c.Groups {
		total += len(g)
		in := 0
		for _, id := range g {
			if s[id] {
				in++
			}
		}
		if len(g) > 0 && 2*in > len(g) {
			won += len(g)
		}
	}
	return 2*won > total
}

// refIndex tries every candidate index and keeps the largest one whose
// acknowledgers form a quorum.
func refIndex(c Config, acked map[ID]uint64) uint64 {
	var best uint64
	for _, cand := range acked {
		s := map[ID]bool{}
		for id, v := range acked {
			if v >= cand {
				s[id] = true
			}
		}
		if refIsQuorum(c, s) && cand > best {
			best = cand
		}
	}
	return best
}

func TestIsQuorumMatchesReference(t *testing.T) {
	f := func(tc testConfig, mask uint64) bool {
		s := subset(tc.Config, mask)
		return tc.IsQuorum(func(id ID) bool { return s[id] }) == refIsQuorum(tc.Config, s)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

func TestIndexMatchesReference(t *testing.T) {
	f := func(tc testConfig, seed int64) bool {
		r := rand.New(rand.NewSource(seed))
		acked := map[ID]uint64{}
		for _, g := range tc.Groups {
			for _, id := range g {
				acked[id] = uint64(r.Intn(10))
			}
		}
		got := tc.Index(func(id ID) uint64 { return acked[id] })
		return got == refIndex(tc.Config, acked)
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Fatal(err)
	}
}

// TestQuorumsIntersect checks the property safety rests on, by brute force
// over pairs of random subsets: two quorums of one configuration share a
// server.
func TestQuorumsIntersect(t *testing.T) {
	f := func(tc testConfig, m1, m2 uint64) bool {
		a, b := subset(tc.Config, m1), subset(tc.Config, m2)
		if !refIsQuorum(tc.Config, a) || !refIsQuorum(tc.Config, b) {
			return true
		}
		for id := range a {
			if b[id] {
				return true
			}
		}
		return false
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000}); err != nil {
		t.Fatal(err)
	}
}

// TestSingleChangeIntersect checks that a quorum of a configuration and a
// quorum of the configuration with one server added to (or removed from) one
// group always share a server: the reason configuration changes go one server
// at a time.
func TestSingleChangeIntersect(t *testing.T) {
	f := func(tc testConfig, m1, m2 uint64, pick uint8, remove bool) bool {
		old := tc.Config
		var nw Config
		g := int(pick) % len(old.Groups)
		for i, members := range old.Groups {
			cp := append([]ID(nil), members...)
			if i == g {
				if remove && len(cp) > 0 {
					cp = cp[:len(cp)-1]
				} else if !remove {
					cp = append(cp, 1000)
				}
			}
			nw.Groups = append(nw.Groups, cp)
		}
		a := subset(old, m1)
		b := subset(nw, m2)
		if !refIsQuorum(old, a) || !refIsQuorum(nw, b) {
			return true
		}
		for id := range a {
			if b[id] {
				return true
			}
		}
		return false
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 20000}); err != nil {
		t.Fatal(err)
	}
}

func TestTable(t *testing.T) {
	// Three groups of three: two majorities of two groups (4 servers of 9)
	// are a quorum although they are far from a plain majority.
	c := Config{Groups: [][]ID{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}}
	tests := []struct {
		in   []ID
		want bool
	}{
		{[]ID{1, 2, 4, 5}, true},
		{[]ID{1, 2, 4}, false},
		{[]ID{1, 2, 3}, false},
		{[]ID{1, 2, 3, 4, 5, 6}, true},
		{nil, false},
	}
	for _, tt := range tests {
		s := map[ID]bool{}
		for _, id := range tt.in {
			s[id] = true
		}
		if got := c.IsQuorum(func(id ID) bool { return s[id] }); got != tt.want {
			t.Errorf("IsQuorum(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	// Unequal groups: group 0 alone weighs 5 of 9.
	c = Config{Groups: [][]ID{{1, 2, 3, 4, 5}, {6, 7}, {8, 9}}}
	if !c.IsQuorum(func(id ID) bool { return id <= 3 }) {
		t.Error("majority of a group of 5 out of 9 must be a quorum")
	}
	if c.GroupOf(7) != 1 || c.GroupOf(42) != -1 {
		t.Error("GroupOf")
	}
}
