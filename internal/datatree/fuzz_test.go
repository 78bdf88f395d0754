package datatree

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// fuzzTree is a small tree (a session, an ephemeral, an ACL) with more
// entries applied after it.
func fuzzTree(more ...txn.Entry) *Tree {
	tr := New()
	for _, e := range append([]txn.Entry{
		{Zxid: 1, Session: sess, Timeout: 5000, Passwd: []byte("pw"), Op: txn.Op{Kind: txn.KindCreateSession}},
		{Zxid: 2, Session: sess, Op: createOp("/a", []byte("x"), zkproto.ModePersistent)},
		{Zxid: 3, Session: sess, Op: createOp("/a/e", nil, zkproto.ModeEphemeral)},
		{Zxid: 4, Session: sess, Op: createACL("/b", aliceAll)},
	}, more...) {
		tr.Apply(&e)
	}
	return tr
}

// fuzzSnapshots are small snapshots without their CRC trailer: the fuzz
// target appends a correct one, so that mutations reach the parser instead
// of stopping at the checksum.
func fuzzSnapshots(t testing.TB) [][]byte {
	small := fuzzTree()
	var out [][]byte
	for _, tr := range []*Tree{New(), small} {
		b := snapshotBytes(t, tr)
		out = append(out, b[:len(b)-4])
	}
	return out
}

// FuzzReadSnapshot checks that ReadSnapshot never panics, that whatever it
// accepts is a consistent tree, and that the tree writes back a snapshot it
// reads again to the same state. The seed corpus is in
// testdata/fuzz/FuzzReadSnapshot.
func FuzzReadSnapshot(f *testing.F) {
	for _, b := range fuzzSnapshots(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		sum := crc32.Checksum(body, crcTable)
		b := binary.BigEndian.AppendUint32(bytes.Clone(body), sum)
		tr, err := ReadSnapshot(bytes.NewReader(b))
		if err != nil {
			return
		}
		checkInvariants(t, tr)
		again, err := ReadSnapshot(bytes.NewReader(snapshotBytes(t, tr)))
		if err != nil {
			t.Fatalf("an accepted snapshot does not survive a rewrite: %v", err)
		}
		if again.Digest() != tr.Digest() || dump(again) != dump(tr) {
			t.Fatalf("rewrite changed the tree")
		}
	})
}

// FuzzReadSnapshotSections feeds snapshots with sections, whole (each
// section's checksum and the trailer are only checked after its frames are
// parsed, so mutations reach the parser): ReadSnapshotSections never
// panics, and what it accepts is a consistent tree whose damaged sections
// are among those the snapshot declares.
func FuzzReadSnapshotSections(f *testing.F) {
	tr := fuzzTree(txn.Entry{Zxid: 5, Session: sess, Op: createOp("/b/c", []byte("yz"), zkproto.ModePersistent)})
	tr.SetSnapshotSections([]string{"a", "b"})
	f.Add(snapshotBytes(f, tr))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, damaged, err := ReadSnapshotSections(bytes.NewReader(b))
		if err != nil {
			return
		}
		checkInvariants(t, got)
		for _, name := range damaged {
			if _, ok := got.nodes["/"+name]; !ok {
				t.Fatalf("damaged section %q without its root", name)
			}
		}
	})
}
