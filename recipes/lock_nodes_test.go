package recipes

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

// kazooContender is kazoo's own rule, written as kazoo writes it (a
// regexp searched in the name), to check contenderSeq against.
func kazooContender(child string, names []string) (string, bool) {
	re := regexp.MustCompile(`(?:` + regexp.QuoteMeta(names[0]) + func() string {
		s := ""
		for _, n := range names[1:] {
			s += "|" + regexp.QuoteMeta(n)
		}
		return s
	}() + `)(-?\d{10})$`)
	m := re.FindStringSubmatch(child)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func TestContenderSeq(t *testing.T) {
	tests := []struct {
		child string
		names []string
		seq   string
		ok    bool
	}{
		{"0123456789abcdef0123456789abcdef__lock__0000000007", exclusiveBlockers, "0000000007", true},
		{"0123456789abcdef0123456789abcdef__rlock__0000000007", exclusiveBlockers, "0000000007", true},
		{"0123456789abcdef0123456789abcdef__rlock__0000000007", sharedBlockers, "", false},
		{"x__lock__-2147483648", sharedBlockers, "-2147483648", true},
		{"x__lock__000000007", sharedBlockers, "", false},   // nine digits
		{"x__lock__00000000070", sharedBlockers, "", false}, // eleven digits
		{"x__lock__000000000a", sharedBlockers, "", false},
		{"__tas__", exclusiveBlockers, "", false},
		{"__lockdelay__", exclusiveBlockers, "", false},
		{"_c_uuid-lock-0000000001", exclusiveBlockers, "", false}, // Curator's name
	}
	for _, tc := range tests {
		seq, ok := contenderSeq(tc.child, tc.names)
		if seq != tc.seq || ok != tc.ok {
			t.Errorf("contenderSeq(%q) = %q %v, want %q %v", tc.child, seq, ok, tc.seq, tc.ok)
		}
	}
}

// TestContenderSeqMatchesKazoo compares contenderSeq with kazoo's regexp
// on random names built from the pieces that matter.
func TestContenderSeqMatchesKazoo(t *testing.T) {
	pieces := []string{"__lock__", "__rlock__", "_", "lock", "-", "0", "1", "9", "0000000000", "123456789", "a", "__"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		name := ""
		for range rng.IntN(6) {
			name += pieces[rng.IntN(len(pieces))]
		}
		for _, names := range [][]string{exclusiveBlockers, sharedBlockers} {
			gs, gok := contenderSeq(name, names)
			ws, wok := kazooContender(name, names)
			if gs != ws || gok != wok {
				t.Fatalf("%q with %v: got %q %v, kazoo %q %v", name, names, gs, gok, ws, wok)
			}
		}
	}
}

// TestPredecessor checks the queue rule against a direct computation:
// sort kazoo's way and take the nearest blocking node ahead.
func TestPredecessor(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		n := 1 + rng.IntN(12)
		var kids []string
		seqs := rng.Perm(100)[:n]
		for i, s := range seqs {
			name := lockNodeName
			if rng.IntN(2) == 0 {
				name = rlockNodeName
			}
			kids = append(kids, fmt.Sprintf("uuid%d%s%010d", i, name, s))
		}
		kids = append(kids, "__tas__", "__lockdelay__")
		me := kids[rng.IntN(n)]
		mySeq := me[len(me)-10:]
		for _, blockers := range [][]string{exclusiveBlockers, sharedBlockers} {
			var ahead []string
			for _, k := range kids {
				if s, ok := contenderSeq(k, blockers); ok && s < mySeq {
					ahead = append(ahead, k)
				}
			}
			slices.SortFunc(ahead, func(a, b string) int {
				sa, _ := contenderSeq(a, blockers)
				sb, _ := contenderSeq(b, blockers)
				return cmpString(sa, sb)
			})
			want := ""
			if len(ahead) > 0 {
				want = ahead[len(ahead)-1]
			}
			got, found := predecessor(kids, me, mySeq, blockers)
			if !found || got != want {
				t.Fatalf("predecessor of %s in %v with %v: %q %v, want %q", me, kids, blockers, got, found, want)
			}
		}
		if _, found := predecessor(kids, "missing__lock__0000000500", "0000000500", exclusiveBlockers); found {
			t.Fatal("found a node that is not there")
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
