package corrupt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/server"
)

// config is an in-process server's on dir declaring /1 strong and /2
// weak, snapshotting every 50 entries.
func config(t *testing.T, dir string) server.Config {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = dir
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.ForceSync = false
	cfg.SnapCount = 50
	for name, level := range map[string]string{"1": "strong", "2": "weak"} {
		if err := cfg.DeclareNamespace(name, level); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

func start(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	s, err := server.New(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// startEnsemble runs an in-process ensemble of three servers over real
// TCP, their data directories in dirs.
func startEnsemble(t *testing.T, dirs []string) []*server.Server {
	t.Helper()
	var peers []members.Member
	for i := range dirs {
		port, err := itest.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, members.Member{ID: members.ID(i + 1), Peer: fmt.Sprintf("127.0.0.1:%d", port)})
	}
	var out []*server.Server
	for i, dir := range dirs {
		cfg := config(t, dir)
		cfg.ServerID = members.ID(i + 1)
		cfg.Ensemble = server.Ensemble{Members: peers, Shape: members.Shape{Trees: 1, Children: 3}, Tick: 10 * time.Millisecond}
		out = append(out, start(t, cfg))
	}
	return out
}

// populate writes enough under /1 and /2 for snapshots to exist: the
// newest write to /2 (a multi) is followed by writes to /1 only, so the
// newest record of /2 is not the log's last. A write whose connection is
// lost (an ensemble electing its leader) has an unknown outcome and is
// made again; done says which errors mean an earlier attempt succeeded.
func populate(t *testing.T, s *server.Server) {
	t.Helper()
	c, _, err := zk.Connect([]string{s.Addr().String()}, 5*time.Second, zk.WithLogInfo(false),
		zk.WithLogger(log.New(io.Discard, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	write := func(what string, fn func() error, done ...error) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			err := fn()
			if err == nil || slices.ContainsFunc(done, func(d error) bool { return errors.Is(err, d) }) {
				return
			}
			lost := errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrConnectionClosed)
			if !lost || time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	acl := zk.WorldACL(zk.PermAll)
	create := func(p string, data []byte) {
		write("create "+p, func() error { _, err := c.Create(p, data, 0, acl); return err }, zk.ErrNodeExists)
	}
	set := func(p string, data string) {
		write("set "+p, func() error { _, err := c.Set(p, []byte(data), -1); return err })
	}
	create("/1/a", bytes.Repeat([]byte("one "), 16))
	create("/2/b", bytes.Repeat([]byte("two "), 16))
	for i := range 120 {
		p := "/1/a"
		if i%2 == 1 {
			p = "/2/b"
		}
		set(p, fmt.Sprintf("%s value %d, long enough to be damaged", p, i))
	}
	write("multi", func() error {
		_, err := c.Multi(&zk.CreateRequest{Path: "/2/m", Data: []byte("in a multi"), Acl: acl},
			&zk.SetDataRequest{Path: "/2/b", Data: []byte("multi"), Version: -1})
		return err
	}, zk.ErrNodeExists)
	for i := range 5 {
		set("/1/a", fmt.Sprintf("after %d", i))
	}
}

// waitSnapshot waits for a snapshot in snapDir: snapshots are saved in
// the background.
func waitSnapshot(t *testing.T, snapDir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, _, found, _ := snap.Newest(snapDir); found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot saved in %s", snapDir)
		}
	}
}

// changedOffsets returns where two files' bytes differ.
func changedOffsets(t *testing.T, before []byte, path string) []int64 {
	t.Helper()
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%s changed size", path)
	}
	var offs []int64
	for i := range after {
		if after[i] != before[i] {
			offs = append(offs, int64(i))
		}
	}
	return offs
}

// nodeSpans returns the spans of the tree's nodes in a snapshot file's
// bytes, in the snapshot's order, in file offsets.
func nodeSpans(t *testing.T, file []byte, member bool) []datatree.NodeSpan {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "copy.snap")
	if err := os.WriteFile(p, file, 0o600); err != nil {
		t.Fatal(err)
	}
	var body []byte
	info, err := snap.ReadFile(p, func(_ int64, r io.Reader) (err error) { body, err = io.ReadAll(r); return err })
	if err != nil {
		t.Fatal(err)
	}
	tree := body
	if member {
		tree, _ = replica.SnapshotData(body)
		tree, _ = server.SnapshotTree(tree)
	}
	base := info.BodyOffset + int64(len(body)-len(tree))
	var spans []datatree.NodeSpan
	if err := datatree.SnapshotNodeSpans(bytes.NewReader(tree), func(n datatree.NodeSpan) error {
		n.RecordOff += base
		n.DataOff += base
		spans = append(spans, n)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return spans
}

// checkSnapshotDamage runs the snapshot target on dir and checks that
// exactly the reported bytes changed, all inside the /2 node written last
// (in its data when it has enough), and that the snapshot no longer
// verifies.
func checkSnapshotDamage(t *testing.T, dir, snapDir string, member bool) Report {
	t.Helper()
	newest, _, found, err := snap.Newest(snapDir)
	if err != nil || !found {
		t.Fatalf("no snapshot in %s: %v", snapDir, err)
	}
	before, _ := os.ReadFile(newest)
	spans := nodeSpans(t, before, member)
	var last datatree.NodeSpan
	for _, n := range spans {
		if strings.HasPrefix(n.Path, "/2") && n.Mzxid >= last.Mzxid {
			last = n
		}
	}
	rep, err := Run(Options{DataDir: dir, Namespace: "2", Target: Snapshot, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	// The data when there are enough bytes of it, else the whole record.
	region, from, size := "data", last.DataOff, last.DataLen
	if last.DataLen < DefaultBytes {
		region, from, size = "record", last.RecordOff, last.RecordLen
	}
	if rep.File != newest || rep.Znode != last.Path || rep.Region != region || len(rep.Offsets) != DefaultBytes {
		t.Fatalf("report %+v; want %d bytes of the %s of %s in %s", rep, DefaultBytes, region, last.Path, newest)
	}
	if got := changedOffsets(t, before, newest); fmt.Sprint(got) != fmt.Sprint(rep.Offsets) {
		t.Fatalf("changed bytes at %v, reported %v", got, rep.Offsets)
	}
	for _, o := range rep.Offsets {
		if o < from || o >= from+size {
			t.Fatalf("offset %d outside the %s of %s (%d+%d)", o, region, last.Path, from, size)
		}
	}
	if _, err := snap.Inspect(newest); err == nil {
		t.Fatal("the damaged snapshot still verifies")
	}
	if p, _, _, _ := snap.Newest(snapDir); p == newest {
		t.Fatal("snap.Newest still takes the damaged snapshot")
	}
	return rep
}

// record2 is a log record that writes under /2, with its txn.Entry.
type record2 struct {
	wal.Record
	entry []byte
	multi bool
}

// newestRecordOf2 returns the newest record in logDir that writes under
// /2 (nil if none), calling each for every record read.
func newestRecordOf2(logDir string, member bool, each func(wal.Record)) (*record2, error) {
	var newest *record2
	err := wal.Records(logDir, func(r wal.Record) error {
		each(r)
		entry := r.Payload
		if member {
			body, ok := replica.ProposalBody(r.Payload)
			if entry, ok = server.ProposalEntry(body); !ok {
				return nil
			}
		}
		e, err := txn.Unmarshal(entry)
		if err != nil {
			return err
		}
		for _, op := range append([]txn.Op{e.Op}, e.Op.Ops...) {
			if strings.HasPrefix(op.Path, "/2/") {
				r.Payload = bytes.Clone(r.Payload)
				newest = &record2{r, bytes.Clone(entry), e.Op.Kind == txn.KindMulti}
			}
		}
		return nil
	})
	return newest, err
}

// waitMultiLogged waits until the log in logDir holds populate's multi.
// A member answers a write once a quorum holds it, which need not include
// itself: the member the client wrote through may not have the write in
// its own log yet, and stopping it then would leave it out.
func waitMultiLogged(t *testing.T, logDir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		// The log is being written: a torn tail is an error to wait past.
		if r, err := newestRecordOf2(logDir, true, func(wal.Record) {}); err == nil && r != nil && r.multi {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("populate's multi is not in %s", logDir)
		}
	}
}

// checkLogDamage runs the log target on dir and checks that exactly the
// reported bytes changed, inside the payload of the newest record that
// writes under /2, whose header checksum holds while its payload's fails.
func checkLogDamage(t *testing.T, dir, logDir string, member bool) Report {
	t.Helper()
	all := map[string][]byte{}
	newest2, err := newestRecordOf2(logDir, member, func(r wal.Record) {
		if all[r.Segment] == nil {
			all[r.Segment], _ = os.ReadFile(r.Segment)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if newest2 == nil {
		t.Fatal("no record of /2 in the log")
	}
	rep, err := Run(Options{DataDir: dir, Namespace: "2", Target: Log, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.File != newest2.Segment || rep.Zxid != fmt.Sprintf("0x%x", newest2.Zxid) || len(rep.Offsets) != DefaultBytes ||
		fmt.Sprint(rep.Paths) != "[/2/m /2/b]" {
		t.Fatalf("report %+v; want record 0x%x (the multi creating /2/m and setting /2/b) in %s", rep, newest2.Zxid, newest2.Segment)
	}
	if got := changedOffsets(t, all[rep.File], rep.File); fmt.Sprint(got) != fmt.Sprint(rep.Offsets) {
		t.Fatalf("changed bytes at %v, reported %v", got, rep.Offsets)
	}
	entryOff := newest2.PayloadOffset + int64(len(newest2.Payload)-len(newest2.entry))
	for _, o := range rep.Offsets {
		if o < entryOff || o >= newest2.PayloadOffset+int64(len(newest2.Payload)) {
			t.Fatalf("offset %d outside the transaction of record 0x%x", o, newest2.Zxid)
		}
	}
	_, err = wal.Check(logDir)
	var ce *wal.CorruptError
	if !errors.As(err, &ce) || ce.File != newest2.Segment || ce.Offset != newest2.Offset || !strings.HasPrefix(ce.Reason, "record checksum mismatch") {
		t.Fatalf("wal.Check after the damage: %v; want the payload checksum of the record at %d", err, newest2.Offset)
	}
	return rep
}

// TestCorruptStandalone damages a stopped standalone server's newest
// snapshot and log record of /2, refusing while the server runs; the same
// seed damages a copy of the directory identically, and a namespace with
// no znode or record is an error.
func TestCorruptStandalone(t *testing.T) {
	dir := t.TempDir()
	s := start(t, config(t, dir))
	populate(t, s)
	cfg := server.Config{DataDir: dir}
	waitSnapshot(t, cfg.SnapDir())
	_, err := Run(Options{DataDir: dir, Namespace: "2", Target: Log})
	if err == nil || !strings.Contains(err.Error(), "a server is running on "+dir) {
		t.Fatalf("Run on a running server: %v", err)
	}
	s.Close()
	twin, clean := t.TempDir(), t.TempDir()
	for _, d := range []string{twin, clean} {
		if err := os.CopyFS(d, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
	}

	reps := []Report{checkSnapshotDamage(t, dir, cfg.SnapDir(), false), checkLogDamage(t, dir, cfg.LogDir(), false)}
	for _, rep := range reps {
		again, err := Run(Options{DataDir: twin, Namespace: "2", Target: rep.Target, Seed: rep.Seed})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(rep.File)
		b, _ := os.ReadFile(again.File)
		if fmt.Sprint(again.Offsets) != fmt.Sprint(rep.Offsets) || !bytes.Equal(a, b) {
			t.Fatalf("the same seed damaged the copy differently: %v, %v", again.Offsets, rep.Offsets)
		}
	}

	for target, want := range map[Target]string{Snapshot: "no znode of namespace 3", Log: "no log record touches /3"} {
		if _, err := Run(Options{DataDir: clean, Namespace: "3", Target: target}); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s of a namespace with nothing: %v; want %q", target, err, want)
		}
	}
	if _, err := Run(Options{DataDir: t.TempDir(), Namespace: "2", Target: Log}); err == nil || !strings.Contains(err.Error(), "unknown layout") {
		t.Fatalf("an empty directory: %v", err)
	}
}

// TestCorruptMember does the same to a member of an ensemble: its snapshot
// through its data directory, its log through its replica directory.
func TestCorruptMember(t *testing.T) {
	dir := t.TempDir()
	servers := startEnsemble(t, []string{dir, t.TempDir(), t.TempDir()})
	populate(t, servers[0])
	cfg := server.Config{DataDir: dir}
	rd := cfg.ReplicaDir()
	waitSnapshot(t, replica.SnapshotDir(rd))
	waitMultiLogged(t, replica.LogDir(rd))
	for _, s := range servers {
		s.Close()
	}
	checkSnapshotDamage(t, dir, replica.SnapshotDir(rd), true)
	checkLogDamage(t, rd, replica.LogDir(rd), true)
}
