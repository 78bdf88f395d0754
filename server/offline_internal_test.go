package server

import (
	"bytes"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/sessions"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// TestOfflineReaders: ProposalEntry finds the entry in the bodies the
// proposer writes (proposeLoop) and none in the others; SnapshotTree
// finds the tree in the data a member snapshots (replicated.snapshot).
func TestOfflineReaders(t *testing.T) {
	e := txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindSetData, Path: "/2/x", Data: []byte("v")}}
	want := e.Marshal(nil)
	for _, body := range [][]byte{
		e.Marshal([]byte{bodyTxn}),
		e.Marshal(sessions.AppendExpiry([]byte{bodyExpiry}, 0x500000001)),
	} {
		if got, ok := ProposalEntry(body); !ok || !bytes.Equal(got, want) {
			t.Fatalf("ProposalEntry(%x) = %x, %v", body, got, ok)
		}
	}
	for _, body := range [][]byte{nil, {bodySync}, touchBody([]int64{1, 2})} {
		if _, ok := ProposalEntry(body); ok {
			t.Fatalf("ProposalEntry(%x) found an entry", body)
		}
	}

	var tree bytes.Buffer
	if err := datatree.New().WriteSnapshot(&tree); err != nil {
		t.Fatal(err)
	}
	owners := sessions.NewOwners()
	owners.Track(&txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindCreateSession}}, txn.Result{}, 1)
	prefix := owners.AppendTo(nil)
	if len(prefix) == 0 {
		t.Fatal("no owners encoded")
	}
	got, err := SnapshotTree(append(prefix, tree.Bytes()...))
	if err != nil || !bytes.Equal(got, tree.Bytes()) {
		t.Fatalf("SnapshotTree: %v, tree found %v", err, bytes.Equal(got, tree.Bytes()))
	}
}
