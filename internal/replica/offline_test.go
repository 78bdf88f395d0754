package replica

import (
	"bytes"
	"io"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// TestOfflineReaders: the files a replica writes, read back offline,
// give the proposal bodies of its normal entries (and none for a no-op)
// and the application's snapshot data.
func TestOfflineReaders(t *testing.T) {
	dir := t.TempDir()
	st, _, err := openStorage(dir, false, quiet, grid(1, 3), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	prop := proposalHeader{Origin: 2, Inc: 7, Stream: 1, Seq: 1}.append(nil)
	rd := gpaxos.Ready{Entries: []gpaxos.Entry{
		{Zxid: gpaxos.MakeZxid(1, 1), Type: gpaxos.EntryNoop},
		{Zxid: gpaxos.MakeZxid(1, 2), Type: gpaxos.EntryNormal, Data: append(prop, "body"...)},
	}}
	if err := st.persist(&rd); err != nil {
		t.Fatal(err)
	}
	if err := st.saveSnapshot(gpaxos.MakeZxid(1, 2), grid(1, 3), []byte("app data"), 3); err != nil {
		t.Fatal(err)
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}

	var bodies []string
	if err := wal.Records(LogDir(dir), func(r wal.Record) error {
		if body, ok := ProposalBody(r.Payload); ok {
			bodies = append(bodies, string(body))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 || bodies[0] != "body" {
		t.Fatalf("proposal bodies %q, want [body]", bodies)
	}

	path, _, found, err := snap.Newest(SnapshotDir(dir))
	if err != nil || !found {
		t.Fatalf("no snapshot in %s: %v", SnapshotDir(dir), err)
	}
	var data []byte
	if _, err := snap.ReadFile(path, func(_ int64, r io.Reader) error {
		body, err := io.ReadAll(r)
		if err == nil {
			data, err = SnapshotData(body)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, []byte("app data")) {
		t.Fatalf("snapshot data %q", data)
	}
}
