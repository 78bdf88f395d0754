package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// entries returns a session's creation and n creates under it, zxids from 1.
func entries(n int) []*txn.Entry {
	es := []*txn.Entry{{Zxid: 1, Time: 1_700_000_000_000, Session: 7, Timeout: 30000, Passwd: make([]byte, 16),
		Op: txn.Op{Kind: txn.KindCreateSession}}}
	for i := range n {
		es = append(es, &txn.Entry{Zxid: int64(i + 2), Time: 1_700_000_000_000, Session: 7, Op: txn.Op{Kind: txn.KindCreate,
			OpCode: zkproto.OpCreate, Path: fmt.Sprintf("/n%d", i), Data: []byte("data"), ACL: zkproto.OpenACLUnsafe}})
	}
	return es
}

// snapshotFile writes the tree those entries make as a snapshot file.
func snapshotFile(t *testing.T, n int) (string, *datatree.Tree) {
	t.Helper()
	tree := datatree.New()
	for _, e := range entries(n) {
		if res, _ := tree.Apply(e); res.Err != zkproto.OK {
			t.Fatal(res.Err)
		}
	}
	var b bytes.Buffer
	if _, err := snap.Encode(&b, tree.LastZxid(), tree.WriteSnapshot); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "backup.snap")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, tree
}

// TestInspectDumpRestore: status describes a good file and refuses a
// damaged one; dump lists every znode; restore refuses a used directory
// and writes a snapshot a server's recovery loads as the same tree.
func TestInspectDumpRestore(t *testing.T) {
	file, tree := snapshotFile(t, 5)
	st, err := Inspect(file)
	if err != nil || !st.ChecksumOK || st.Zxid != "0x6" || st.Znodes != tree.NodeCount() || st.Sessions != 1 ||
		st.Digest != fmt.Sprintf("0x%x", tree.Digest()) || st.FormatVersion != 1 {
		t.Fatalf("Inspect = %+v, %v", st, err)
	}

	var out bytes.Buffer
	if err := Dump(file, &out, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n/n4 czxid=0x6 ", "acl=world:anyone:cdrwa", `  data: "data"`, "\nsession 0x7 timeout=30000"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, out.String())
		}
	}

	used := t.TempDir()
	os.WriteFile(filepath.Join(used, "hardstate"), []byte("1"), 0o600)
	if _, err := Restore(file, filepath.Join(used, "snap"), filepath.Join(used, "log"), []string{used}); err == nil {
		t.Fatal("Restore wrote into a directory in use")
	}
	// A myid file alone names the member the directory is for.
	fresh := t.TempDir()
	os.WriteFile(filepath.Join(fresh, "myid"), []byte("1"), 0o600)
	if _, err := Restore(file, filepath.Join(fresh, "snap"), filepath.Join(fresh, "log"), []string{fresh}); err != nil {
		t.Fatal(err)
	}
	var back *datatree.Tree
	if _, _, err := snap.LoadNewest(filepath.Join(fresh, "snap"), func(_ int64, r io.Reader) error {
		back, err = datatree.ReadSnapshot(r)
		return err
	}); err != nil || back.Digest() != tree.Digest() || back.LastZxid() != tree.LastZxid() {
		t.Fatalf("the restored snapshot: %v", err)
	}
	// The log begins after the snapshot: it does not hold the history
	// before it.
	lg, err := wal.Open(filepath.Join(fresh, "log"), wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := lg.Replay(0, func(int64, []byte) error { return nil }); !errors.Is(err, wal.ErrPurged) {
		t.Fatalf("replaying the restored log from 0: %v, want ErrPurged", err)
	}
	lg.Close()

	b, _ := os.ReadFile(file)
	b[len(b)/2] ^= 1
	os.WriteFile(file, b, 0o600)
	if st, err := Inspect(file); err == nil || st.ChecksumOK || st.Bytes != int64(len(b)) {
		t.Fatalf("Inspect of a damaged file = %+v, %v", st, err)
	}
}

// TestDumpAndVerifyLog lists a standalone server's log and a member's and
// verifies them; a torn tail is reported, not an error.
func TestDumpAndVerifyLog(t *testing.T) {
	standalone, member := t.TempDir(), t.TempDir()
	sl, err := wal.Open(standalone, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ml, err := wal.Open(member, wal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries(3) {
		sl.Append(e.Zxid, e.Marshal(nil))
		ml.Append(1<<32|e.Zxid, append([]byte{byte(gpaxos.EntryNormal)}, e.Marshal(nil)...))
	}
	sl.Close()
	ml.Close()

	var out bytes.Buffer
	if err := DumpLog(Log{Dir: standalone}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0x1 log.0000000000000001:32 createSession session=0x7") ||
		!strings.Contains(out.String(), "0x4 log.0000000000000001:") || !strings.HasSuffix(out.String(), "path=/n2\n") {
		t.Errorf("standalone dump:\n%s", out.String())
	}
	out.Reset()
	if err := DumpLog(Log{Dir: member, Member: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0x100000004 log.0000000000000001:") || !strings.Contains(out.String(), "epoch=1 counter=4 type=normal") {
		t.Errorf("member dump:\n%s", out.String())
	}
	if rep, err := VerifyLog(Log{Dir: standalone}); err != nil || rep.Records != 4 || rep.LastZxid != 4 || rep.Tail.Bytes != 0 {
		t.Fatalf("VerifyLog = %+v, %v", rep, err)
	}
	seg := filepath.Join(standalone, "log.0000000000000001")
	b, _ := os.ReadFile(seg)
	os.WriteFile(seg, b[:len(b)-2], 0o600)
	if rep, err := VerifyLog(Log{Dir: standalone}); err != nil || rep.Records != 3 || rep.Tail.Bytes == 0 || rep.Tail.Damaged {
		t.Fatalf("VerifyLog of a torn tail = %+v, %v", rep, err)
	}
}

// TestSaveAsksAgain: a server that cannot give a snapshot for now (not
// serving, busy) is asked again until it gives one; a refusal that will
// not change (a wrong token) ends Save at once.
func TestSaveAsksAgain(t *testing.T) {
	file, tree := snapshotFile(t, 3)
	body, _ := os.ReadFile(file)
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := asked.Add(1)
		switch {
		case r.Header.Get("Authorization") != "Bearer tok":
			http.Error(w, "admin token required", http.StatusUnauthorized)
		case n == 1:
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintln(w, `{"command":"snapshot","error":"This ZooKeeper instance is not currently serving requests"}`)
		case n == 2:
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprintln(w, `{"command":"snapshot","error":"another snapshot is being taken"}`)
		default:
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("last_zxid", fmt.Sprintf("0x%x", tree.LastZxid()))
			w.Write(body)
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	out := filepath.Join(t.TempDir(), "b.snap")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, from, err := Save(ctx, adminapi.Client{Token: "tok"}, []string{addr}, out)
	if err != nil || from != addr || asked.Load() != 3 || st.Digest != fmt.Sprintf("0x%x", tree.Digest()) {
		t.Fatalf("Save = %+v from %s after %d requests: %v", st, from, asked.Load(), err)
	}
	asked.Store(0)
	if _, _, err := Save(ctx, adminapi.Client{Token: "wrong"}, []string{addr}, out); !errors.Is(err, adminapi.ErrUnauthorized) || asked.Load() != 1 {
		t.Fatalf("Save with a wrong token: %v after %d requests", err, asked.Load())
	}
}

// TestDumpTaggedLog: a log of format version 2 lists each record's
// namespace mask after its place.
func TestDumpTaggedLog(t *testing.T) {
	dir := t.TempDir()
	l, err := wal.Open(dir, wal.Options{Tagged: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries(2) {
		if err := l.AppendTagged(e.Zxid, 0x5, e.Marshal(nil)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := DumpLog(Log{Dir: dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "0x1 log.0000000000000001:32 mask=0x5 createSession session=0x7") {
		t.Errorf("tagged dump:\n%s", out.String())
	}
}
