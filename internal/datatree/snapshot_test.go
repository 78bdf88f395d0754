package datatree

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// randomEntries draws n entries from the model test's generator (which
// needs a model to track what exists) starting at zxid first.
func randomEntries(seed uint64, first int64, n int) []txn.Entry {
	r := rand.New(rand.NewPCG(seed, 11))
	m := newModel()
	g := &gen{r: r, m: m, now: 1_000_000, auths: map[int64][]zkproto.Id{
		0x101: nil, 0x102: {alice}, 0x103: {bob}, 0x104: {{Scheme: "super"}}}}
	out := make([]txn.Entry, n)
	for i := range out {
		e := g.entry()
		e.Zxid = first + int64(i)
		m.apply(&e)
		out[i] = e
	}
	return out
}

func snapshotBytes(t testing.TB, tr *Tree) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterminism(t *testing.T) {
	entries := randomEntries(1, 1, 2000)
	a, b := New(), New()
	seen := map[uint64]string{a.Digest(): dump(a)}
	changes := 0
	for i := range entries {
		ea, eb := entries[i], entries[i]
		before, d := dump(a), a.Digest()
		ra, ta := a.Apply(&ea)
		rb, tb := b.Apply(&eb)
		if fmt.Sprint(ra, ta) != fmt.Sprint(rb, tb) || a.Digest() != b.Digest() {
			t.Fatalf("entry %d: replicas diverge", i)
		}
		// The digest changes exactly when the visible state does, and
		// equal digests mean equal states.
		after := dump(a)
		if (after != before) != (a.Digest() != d) {
			t.Fatalf("entry %d (%s): state changed %v, digest changed %v", i, ea.Op.Kind, after != before, a.Digest() != d)
		}
		if prev, ok := seen[a.Digest()]; ok && prev != after {
			t.Fatalf("entry %d: two different states share a digest", i)
		}
		seen[a.Digest()] = after
		if after != before {
			changes++
		}
	}
	if !bytes.Equal(snapshotBytes(t, a), snapshotBytes(t, b)) {
		t.Fatalf("equal trees write different snapshots")
	}
	if changes < 300 {
		t.Fatalf("only %d of 2000 entries changed the tree: the workload is too weak", changes)
	}
	// A single differing byte of data changes the digest.
	c := New()
	for _, e := range []txn.Entry{
		{Zxid: 1, Session: sess, Op: txn.Op{Kind: txn.KindCreateSession}},
		{Zxid: 2, Session: sess, Op: createOp("/x", []byte("a"), 0)},
	} {
		c.Apply(&e)
	}
	d := c.Digest()
	c.Apply(&txn.Entry{Zxid: 3, Session: sess, Op: setDataOp("/x", []byte("b"), -1)})
	c.Apply(&txn.Entry{Zxid: 4, Session: sess, Op: setDataOp("/x", []byte("a"), -1)})
	if c.Digest() == d {
		t.Fatalf("digest ignores the data version and mzxid")
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	for seed := uint64(0); seed < 20; seed++ {
		entries := randomEntries(seed, 1, 700)
		a := New()
		for i := range entries[:500] {
			a.Apply(&entries[i])
		}
		snap := snapshotBytes(t, a)
		b, err := ReadSnapshot(bytes.NewReader(snap))
		if err != nil {
			t.Fatalf("seed %d: ReadSnapshot: %v", seed, err)
		}
		checkInvariants(t, b)
		if b.Digest() != a.Digest() || b.LastZxid() != a.LastZxid() || dump(b) != dump(a) {
			t.Fatalf("seed %d: restored tree differs\n%s\n%s", seed, dump(a), dump(b))
		}
		if aclCount(&b.acls) != aclCount(&a.acls) {
			t.Fatalf("seed %d: %d ACL sets restored, %d before", seed, aclCount(&b.acls), aclCount(&a.acls))
		}
		if !bytes.Equal(snapshotBytes(t, b), snap) {
			t.Fatalf("seed %d: restored tree writes a different snapshot", seed)
		}
		// Both go on identically.
		for i := 500; i < len(entries); i++ {
			ea, eb := entries[i], entries[i]
			ra, ta := a.Apply(&ea)
			rb, tb := b.Apply(&eb)
			if fmt.Sprint(ra, ta) != fmt.Sprint(rb, tb) || a.Digest() != b.Digest() {
				t.Fatalf("seed %d entry %d: restored tree diverges:\n%v %v\n%v %v", seed, i, ra, ta, rb, tb)
			}
		}
		checkInvariants(t, b)
	}
}

func TestSnapshotNullData(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	h.must(txn.Entry{Session: sess, Op: createOp("/null", nil, 0)})
	h.must(txn.Entry{Session: sess, Op: createOp("/empty", []byte{}, 0)})
	b, err := ReadSnapshot(bytes.NewReader(snapshotBytes(t, h.tree)))
	if err != nil {
		t.Fatal(err)
	}
	if d, _, _ := b.GetData("/null", nil); d != nil {
		t.Errorf("null data restored as %q", d)
	}
	if d, _, _ := b.GetData("/empty", nil); d == nil {
		t.Errorf("empty data restored as null")
	}
}

func TestSnapshotCorruption(t *testing.T) {
	a := New()
	for _, e := range randomEntries(3, 1, 60) {
		a.Apply(&e)
	}
	snap := snapshotBytes(t, a)
	for n := 0; n < len(snap); n++ {
		if _, err := ReadSnapshot(bytes.NewReader(snap[:n])); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("snapshot cut to %d of %d bytes: %v", n, len(snap), err)
		}
	}
	for i := range snap {
		bad := slices.Clone(snap)
		bad[i] ^= 0x10
		if _, err := ReadSnapshot(bytes.NewReader(bad)); !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
	if _, err := ReadSnapshot(bytes.NewReader(append(slices.Clone(snap), 0))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("trailing byte: %v", err)
	}
	if _, err := ReadSnapshot(bytes.NewReader([]byte("\x00\x00\x00\x04junk"))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("garbage: %v", err)
	}
	// A reader's own error is passed through, not called a bad snapshot.
	broken := io.MultiReader(bytes.NewReader(snap[:40]), iotestErrReader{})
	if _, err := ReadSnapshot(broken); !errors.Is(err, errDisk) {
		t.Fatalf("reader error: %v", err)
	}
	// A tree whose digest disagrees with its nodes (the checksum is fine)
	// is refused.
	n := a.nodes["/zookeeper/quota"]
	n.data = []byte("tampered")
	if _, err := ReadSnapshot(bytes.NewReader(snapshotBytes(t, a))); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("stale digest: %v", err)
	}
}

var errDisk = errors.New("disk on fire")

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errDisk }

// errWriter fails after n bytes.
type errWriter struct{ n int }

func (w *errWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errDisk
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteSnapshotError(t *testing.T) {
	tr := New()
	for _, e := range randomEntries(4, 1, 3000) {
		tr.Apply(&e)
	}
	size := len(snapshotBytes(t, tr))
	for _, n := range []int{0, 10, size / 2, size - 1} {
		if err := tr.WriteSnapshot(&errWriter{n: n}); !errors.Is(err, errDisk) {
			t.Errorf("writer failing after %d of %d bytes: %v", n, size, err)
		}
	}
}
