package datatree

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// chunkHook is a lock whose Unlock, at the end of each chunk the snapshot
// writer reads, runs a step of the test: the tree changes between chunks,
// deterministically.
type chunkHook struct{ between func() }

func (chunkHook) Lock()     {}
func (h chunkHook) Unlock() { h.between() }

// TestSnapshotViewWhileTreeChanges writes snapshots of random trees, one
// node per chunk, while random entries (creates, deletes, setData,
// setACL, multis that roll back, sessions opening and closing) change the
// tree after every chunk: each snapshot has exactly the bytes of the tree
// at BeginSnapshot, reads back, and the tree stays consistent.
func TestSnapshotViewWhileTreeChanges(t *testing.T) {
	defer func(c int) { snapChunk = c }(snapChunk)
	snapChunk = 1
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		tr, m := New(), newModel()
		if seed%2 == 1 {
			tr.SetSnapshotSections(genNames[:2])
		}
		g := &gen{r: r, m: m, now: 1_000_000, auths: map[int64][]zkproto.Id{
			0x101: nil, 0x102: {alice}, 0x103: {bob}, 0x104: {{Scheme: "super", ID: "x"}}}}
		zxid := int64(0)
		step := func() {
			e := g.entry()
			zxid++
			e.Zxid = zxid
			tr.Apply(&e)
			m.apply(&e)
		}
		for range 150 {
			step()
		}
		for round := range 3 {
			var want bytes.Buffer
			if err := tr.WriteSnapshot(&want); err != nil {
				t.Fatal(err)
			}
			sw, err := tr.BeginSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tr.BeginSnapshot(); err != ErrSnapshotInProgress {
				t.Fatalf("a second snapshot began: %v", err)
			}
			var got bytes.Buffer
			if err := sw.WriteTo(&got, chunkHook{between: func() {
				for range 1 + r.IntN(3) {
					step()
				}
			}}); err != nil {
				t.Fatal(err)
			}
			sw.Close()
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("seed %d round %d: the snapshot written while the tree changed differs from the tree at its start", seed, round)
			}
			back, err := ReadSnapshot(&got)
			if err != nil {
				t.Fatalf("seed %d round %d: %v", seed, round, err)
			}
			if back.NodeCount() == 0 {
				t.Fatalf("seed %d: empty tree read back", seed)
			}
			checkInvariants(t, tr)
			if err := m.compare(tr, g.now); err != nil {
				t.Fatalf("seed %d round %d: the tree after the snapshot: %v", seed, round, err)
			}
		}
	}
}

// TestSnapshotViewUnderTheLock writes a snapshot on another goroutine,
// under the read side of the lock that every change takes exclusively,
// as the server does (run with -race).
func TestSnapshotViewUnderTheLock(t *testing.T) {
	defer func(c int) { snapChunk = c }(snapChunk)
	snapChunk = 4
	var mu sync.RWMutex
	h := newHarness(t)
	h.session(0x101)
	for i := range 200 {
		h.must(txn.Entry{Session: 0x101, Op: createOp(fmt.Sprintf("/n%03d", i), []byte("x"), 0)})
	}
	var want bytes.Buffer
	if err := h.tree.WriteSnapshot(&want); err != nil {
		t.Fatal(err)
	}
	sw, err := h.tree.BeginSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	var got bytes.Buffer
	go func() { done <- sw.WriteTo(&got, mu.RLocker()) }()
	for i := range 200 {
		mu.Lock()
		h.apply(txn.Entry{Session: 0x101, Op: setDataOp(fmt.Sprintf("/n%03d", (i*7)%200), []byte{byte(i)}, -1)})
		if i%3 == 0 {
			h.must(txn.Entry{Session: 0x101, Op: deleteOp(fmt.Sprintf("/n%03d", i), -1)})
		}
		mu.Unlock()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	sw.Close()
	mu.Unlock()
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("the snapshot differs from the tree at its start")
	}
}
