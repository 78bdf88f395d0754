package sim

import "testing"

// Every bug the simulator found, kept as a regression test by seed. Each
// entry says what was wrong; the fix is in internal/gpaxos.
var regressions = []struct {
	tp       topology
	seed     int64
	swarm    bool
	bug      string
	maxBatch int
}{
	{topology{"forest-50-5-10", 50, 5, 10, false}, 1, false,
		"two candidates reached the same epoch number: a group that promised the loser never followed the winner", 0},
	{topology{"classic-3", 3, 1, 2, true}, 1003, true,
		"a replaced coordinator routed around its members and was never told of the newer group epoch", 0},
	{topology{"forest-9-3-3", 9, 3, 3, false}, 1024, false,
		"a member that promised a failed candidate's epoch rejected the leader's older epoch forever", 0},
	{topology{"forest-9-3-3", 9, 3, 3, false}, 1048, false,
		"agreement: a same-epoch catch-up from a lagging coordinator truncated acknowledged entries", 0},
	{topology{"forest-27-3-3", 27, 3, 3, false}, 1063, true,
		"a candidate kept fetching from a holder that had promised a newer epoch", 0},
	{topology{"forest-50-5-10", 50, 5, 10, false}, 5003, true,
		"liveness: a group left out of the winning election was never contacted by the leader; its coordinator kept campaigning and unseating it", 0},
	{topology{"forest-9-3-3", 9, 3, 3, false}, 41, false,
		"agreement: a catch-up carried only a prefix of the new epoch's history; the member followed the epoch with it and was later picked as the best history", 1},
}

func TestRegressions(t *testing.T) {
	for _, r := range regressions {
		t.Run(r.tp.name, func(t *testing.T) { runSeedBatch(t, r.tp, r.seed, r.swarm, r.maxBatch) })
	}
}

// TestReplay checks that a seed replays exactly: the same history, commit
// count and message count twice.
func TestReplay(t *testing.T) {
	o := Options{Seed: 42, Nodes: 9, Trees: 3, Children: 3, Swarm: true}
	a, b := Run(o, nil, false), Run(o, nil, false)
	if a.Commits != b.Commits || a.Messages != b.Messages || len(a.history) != len(b.history) {
		t.Fatalf("replay differs: %+v vs %+v", a, b)
	}
	for i := range a.history {
		if *a.history[i] != *b.history[i] {
			t.Fatalf("history differs at %d: %+v vs %+v", i, *a.history[i], *b.history[i])
		}
	}
	if a.Commits == 0 {
		t.Fatal("no commits")
	}
}
