package console

import (
	"reflect"
	"testing"
)

// TestRecognize: the node layouts of kazoo's, Curator's and ZooKeeper's
// own recipes give their holder (or leader, or head) and the waiting in
// sequence order; anything else is no recipe.
func TestRecognize(t *testing.T) {
	c := func(name string, owner uint64) Child { return Child{Name: name, Owner: Zxid(owner)} }
	k := func(name string, seq int64, owner uint64, mode string) Contender {
		return Contender{Name: name, Seq: seq, Session: Zxid(owner), Mode: mode}
	}
	for _, tc := range []struct {
		name     string
		children []Child
		want     *Recipe
	}{
		{"kazoo Lock, out of order", []Child{c("b7__lock__0000000003", 3), c("a1__lock__0000000001", 1), c("c9__lock__0000000002", 2)},
			&Recipe{Kind: "lock", Layout: "kazoo Lock, Election",
				Holders: []Contender{k("a1__lock__0000000001", 1, 1, "")},
				Waiting: []Contender{k("c9__lock__0000000002", 2, 2, ""), k("b7__lock__0000000003", 3, 3, "")}}},
		{"kazoo read-write: two readers share, a writer waits", []Child{c("x__rlock__0000000000", 1), c("y__rlock__0000000001", 2), c("z__lock__0000000002", 3), c("w__rlock__0000000003", 4)},
			&Recipe{Kind: "read-write lock", Layout: "kazoo ReadLock/WriteLock",
				Holders: []Contender{k("x__rlock__0000000000", 0, 1, "read"), k("y__rlock__0000000001", 1, 2, "read")},
				Waiting: []Contender{k("z__lock__0000000002", 2, 3, "write"), k("w__rlock__0000000003", 3, 4, "read")}}},
		{"kazoo writer first", []Child{c("z__lock__0000000000", 3), c("x__rlock__0000000001", 1)},
			&Recipe{Kind: "read-write lock", Layout: "kazoo ReadLock/WriteLock",
				Holders: []Contender{k("z__lock__0000000000", 0, 3, "write")},
				Waiting: []Contender{k("x__rlock__0000000001", 1, 1, "read")}}},
		{"Curator write lock first", []Child{c("_c_9-__WRIT__0000000007", 5), c("_c_8-__READ__0000000008", 6)},
			&Recipe{Kind: "read-write lock", Layout: "Curator InterProcessReadWriteLock",
				Holders: []Contender{k("_c_9-__WRIT__0000000007", 7, 5, "write")},
				Waiting: []Contender{k("_c_8-__READ__0000000008", 8, 6, "read")}}},
		{"Curator LeaderLatch", []Child{c("_c_1f-latch-0000000004", 9), c("_c_2e-latch-0000000003", 8)},
			&Recipe{Kind: "election", Layout: "Curator LeaderLatch",
				Holders: []Contender{k("_c_2e-latch-0000000003", 3, 8, "")},
				Waiting: []Contender{k("_c_1f-latch-0000000004", 4, 9, "")}}},
		{"Curator semaphore leases all hold", []Child{c("_c_1-lease-0000000000", 1), c("_c_2-lease-0000000001", 2)},
			&Recipe{Kind: "semaphore", Layout: "Curator InterProcessSemaphoreV2",
				Holders: []Contender{k("_c_1-lease-0000000000", 0, 1, ""), k("_c_2-lease-0000000001", 1, 2, "")}, Waiting: []Contender{}}},
		{"ZooKeeper election", []Child{c("n_0000000012", 4)},
			&Recipe{Kind: "election", Layout: "ZooKeeper's election recipe", Holders: []Contender{k("n_0000000012", 12, 4, "")}, Waiting: []Contender{}}},
		{"a persistent queue", []Child{c("queue-0000000002", 0), c("queue-0000000001", 0)},
			&Recipe{Kind: "queue", Layout: "Curator DistributedQueue", Holders: []Contender{k("queue-0000000001", 1, 0, "")},
				Waiting: []Contender{k("queue-0000000002", 2, 0, "")}}},
		{"a child that is not sequential", []Child{c("a__lock__0000000001", 1), c("config", 0)}, nil},
		{"sequential, unknown names", []Child{c("job0000000001", 0)}, nil},
		{"two layouts mixed", []Child{c("a__lock__0000000001", 1), c("_c_1-latch-0000000002", 2)}, nil},
		{"no children", nil, nil},
	} {
		if got := Recognize(tc.children); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
