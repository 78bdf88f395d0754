package server

import (
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// TestSpareForResync: the odd member restarts to resync only when the
// members that agree form a quorum without it, in a classic ensemble and
// in a forest, where a majority of the voters need not be a quorum.
func TestSpareForResync(t *testing.T) {
	classic := quorum.Config{Groups: [][]quorum.ID{{1, 2, 3}}}
	forest := quorum.Config{Groups: [][]quorum.ID{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}}}
	reports := func(good []gpaxos.ID, bad gpaxos.ID) map[gpaxos.ID]digestReport {
		m := map[gpaxos.ID]digestReport{bad: {"2": 9}}
		for _, id := range good {
			m[id] = digestReport{"2": 7}
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		voters quorum.Config
		good   []gpaxos.ID
		self   gpaxos.ID
		want   bool
	}{
		{"classic, both others agree", classic, []gpaxos.ID{1, 2}, 3, true},
		{"forest, two whole groups agree", forest, []gpaxos.ID{1, 2, 3, 4, 5}, 6, true},
		{"forest, a majority in two groups without self", forest, []gpaxos.ID{1, 2, 4, 7, 8}, 5, true},
		// Five of nine agree, a majority of the voters that decides, but
		// without 2 only group 2 has a majority of its members.
		{"forest, a majority of voters but no quorum without self", forest, []gpaxos.ID{1, 4, 7, 8, 9}, 2, false},
		{"forest, its group needs it", forest, []gpaxos.ID{1, 4, 5, 7}, 6, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := spareForResync(tc.voters, tc.self, "2", 7, reports(tc.good, tc.self)); got != tc.want {
				t.Fatalf("spareForResync = %v, want %v", got, tc.want)
			}
		})
	}
	// A member that reported another digest does not count.
	m := reports([]gpaxos.ID{1}, 3)
	m[2] = digestReport{"2": 8}
	if spareForResync(classic, 3, "2", 7, m) {
		t.Fatal("a disagreeing member counted")
	}
}
