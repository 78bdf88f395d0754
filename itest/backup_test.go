package itest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/gozk"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
)

// TestBackupUnderWriteLoad backs up a standalone server while several
// ZooKeeper clients write to it, restores the snapshot into a new data
// directory and starts a server there: every write acknowledged before
// `giraffe snapshot save` began is present, and each writer's writes
// present are a prefix of what it issued (the snapshot is the state at one
// zxid). status and dump describe the file; restore refuses a used
// directory; log verify passes on the server's directory and fails, naming
// the offset, on a copy with one byte flipped.
func TestBackupUnderWriteLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	base, err := freeRange(3)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "data")
	token := writeTokenFile(t)
	p, err := StartServer(dir, base, "--admin-port", strconv.Itoa(base+1), "--admin-token-file", token)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	restored := backupAndRestore(t, []string{p.Addr}, fmt.Sprintf("127.0.0.1:%d", base+1), token, base+2)

	if out, err := giraffe("snapshot", "restore", restored, "--data-dir", dir); err == nil {
		t.Errorf("restore into the live server's directory succeeded:\n%s", out)
	}
	p.Stop()
	out, err := giraffe("log", "verify", "--data-dir", dir)
	if err != nil || !strings.HasSuffix(out, "OK\n") {
		t.Fatalf("log verify on a good directory: %v\n%s", err, out)
	}
	dump, err := giraffe("log", "dump", "--data-dir", dir)
	if err != nil || !strings.Contains(dump, " create session=") {
		t.Fatalf("log dump: %v\n%.2000s", err, dump)
	}

	// Flip one byte in the payload of a record in the middle of the log.
	var recs []wal.Record
	if err := wal.Records(filepath.Join(dir, "log"), func(r wal.Record) error {
		recs = append(recs, wal.Record{Segment: r.Segment, Offset: r.Offset, Zxid: r.Zxid})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(dump, "\n"); lines != len(recs) {
		t.Errorf("log dump printed %d lines for %d records", lines, len(recs))
	}
	bad := recs[len(recs)/2]
	const recordHeaderBytes = 20
	b, err := os.ReadFile(bad.Segment)
	if err != nil {
		t.Fatal(err)
	}
	b[bad.Offset+recordHeaderBytes+1] ^= 0x08
	if err := os.WriteFile(bad.Segment, b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = giraffe("log", "verify", "--data-dir", dir)
	if err == nil || !strings.Contains(out, fmt.Sprintf("at offset %d", bad.Offset)) || !strings.Contains(out, filepath.Base(bad.Segment)) {
		t.Fatalf("log verify with a byte flipped at record 0x%x (offset %d): %v\n%s", bad.Zxid, bad.Offset, err, out)
	}
}

// TestBackupFromEnsembleFollower backs up a classic-3 ensemble through a
// member that does not lead, while clients write through every member:
// the snapshot still holds every write acknowledged before save began,
// wherever it was acknowledged, and restores into a standalone server.
// The members' logs verify and list once they stop.
func TestBackupFromEnsembleFollower(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	c := StartEnsemble(t, Classic3)
	addrs, admin := backupTargets(t, c, false)
	port, err := freeRange(1)
	if err != nil {
		t.Fatal(err)
	}
	backupAndRestore(t, addrs, admin, launcher.TokenFile(c.Spec.Dir), port)

	// The members' logs, once they stopped, verify and list.
	c.Stop(5 * time.Second)
	for _, s := range c.Servers {
		data := filepath.Join(s.Dir, "data")
		if out, err := giraffe("log", "verify", "--data-dir", data); err != nil || !strings.HasSuffix(out, "OK\n") {
			t.Errorf("log verify of member %d: %v\n%s", s.ID, err, out)
		}
		if out, err := giraffe("log", "dump", "--data-dir", data); err != nil || !strings.Contains(out, " type=normal ") {
			t.Errorf("log dump of member %d: %v\n%.2000s", s.ID, err, out)
		}
	}
}

// backupTargets waits for c's leader and returns every member's client
// address and the admin address of the leader (fromLeader) or of a member
// that does not lead.
func backupTargets(t *testing.T, c *launcher.Cluster, fromLeader bool) (addrs []string, admin string) {
	t.Helper()
	leader, err := Leader(c, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers {
		addrs = append(addrs, s.ClientAddr)
		if (s.ID == leader) == fromLeader && admin == "" {
			admin = s.AdminAddr
		}
	}
	return addrs, admin
}

// backupAndRestore takes a backup under write load (takeBackup), restores
// it into a new directory, starts a standalone server there on
// restorePort and checks its tree against the writers' acknowledgements
// (checkRestoredTree). It returns the snapshot file.
func backupAndRestore(t *testing.T, addrs []string, admin, token string, restorePort int) string {
	t.Helper()
	file, before := takeBackup(t, addrs, admin, token)
	restored := filepath.Join(t.TempDir(), "restored")
	if out, err := giraffe("snapshot", "restore", file, "--data-dir", restored); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	p, err := StartServer(restored, restorePort)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	checkRestoredTree(t, p.Addr, before)
	return file
}

// takeBackup writes through six clients of the servers at addrs (each
// connected to one of them, one writer each), saves a snapshot from admin
// during the load, and checks it with status and dump. It returns the
// snapshot file and how many writes each writer saw acknowledged before
// save began.
func takeBackup(t *testing.T, addrs []string, admin, token string) (string, []int) {
	t.Helper()
	setup := connectZK(t, addrs[0])
	if _, err := setup.Create("/bk", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	var conns []*zk.Conn
	const writers = 6
	for i := 0; i < writers; i++ {
		// Writer i starts on server i mod n, so that every server
		// acknowledges writes, and moves to the next when it fails.
		k := i % len(addrs)
		conns = append(conns, connectZK(t, append(append([]string(nil), addrs[k:]...), addrs[:k]...)...))
	}
	w := startZKWriters(conns)
	defer w.stop()
	w.waitAcked(100 * len(conns))

	file := filepath.Join(t.TempDir(), "backup.snap")
	before := w.acked() // acknowledged before save began
	out, err := giraffe("snapshot", "save", "--servers", admin, "--admin-token-file", token, file)
	if err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	during := w.total()
	w.waitAcked(w.total() + 50*len(conns)) // the load goes on past the save
	if err := w.stop(); err != nil {
		t.Fatal(err)
	}

	out, err = giraffe("snapshot", "status", "--json", file)
	var st struct {
		Zxid       string `json:"zxid"`
		Znodes     int    `json:"znodes"`
		ChecksumOK bool   `json:"checksum_ok"`
		Format     int    `json:"format_version"`
	}
	if err != nil || json.Unmarshal([]byte(out), &st) != nil || !st.ChecksumOK || st.Format != 1 || st.Zxid == "" {
		t.Fatalf("snapshot status: %v\n%s", err, out)
	}
	minNodes := 0
	for _, n := range before {
		minNodes += n
	}
	if st.Znodes < minNodes {
		t.Fatalf("the snapshot has %d znodes, fewer than the %d writes acknowledged before save", st.Znodes, minNodes)
	}
	t.Logf("snapshot at %s: %d writes acknowledged before save began, %d when it ended, %d znodes",
		st.Zxid, minNodes, during, st.Znodes)
	dump, err := giraffe("snapshot", "dump", "--data", file)
	if err != nil || !strings.Contains(dump, "\n/bk/w0-0 czxid=") || !strings.Contains(dump, `  data: "w0-0"`) {
		t.Fatalf("snapshot dump: %v\n%.2000s", err, dump)
	}
	return file, before
}

// checkRestoredTree checks the tree a server restored from takeBackup's
// snapshot serves: each writer's writes present are a prefix of what it
// issued (the snapshot is the state at one zxid), and hold at least those
// acknowledged before the backup began.
func checkRestoredTree(t *testing.T, addr string, before []int) {
	t.Helper()
	zc := connectZK(t, addr)
	children, _, err := zc.Children("/bk")
	if err != nil {
		t.Fatal(err)
	}
	present := make([]map[int]bool, len(before))
	for i := range present {
		present[i] = map[int]bool{}
	}
	for _, name := range children {
		var i, n int
		if _, err := fmt.Sscanf(name, "w%d-%d", &i, &n); err != nil || i >= len(before) {
			t.Fatalf("unexpected znode /bk/%s", name)
		}
		present[i][n] = true
	}
	for i, m := range present {
		for n := 0; n < len(m); n++ {
			if !m[n] {
				t.Errorf("%s: writer %d: %d writes present but not w%d-%d: not a prefix", addr, i, len(m), i, n)
				break
			}
		}
		if len(m) < before[i] {
			t.Errorf("%s: writer %d: %d writes acknowledged before save, %d in the restored tree", addr, i, before[i], len(m))
		}
	}
}

// TestBackupRestoresAnEnsemble backs up a classic-3 ensemble under write
// load, stops it, restores every member's data directory from the file
// (giraffe snapshot restore --config, beside the member's myid) and starts
// the members again: they elect a leader, each serves the tree the backup
// holds, new writes follow the backup's zxid, and the replicas' digests
// agree. A member whose directory holds state is refused.
func TestBackupRestoresAnEnsemble(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real processes")
	}
	c := StartEnsemble(t, Classic3)
	addrs, admin := backupTargets(t, c, true)
	file, before := takeBackup(t, addrs, admin, launcher.TokenFile(c.Spec.Dir))
	status, err := giraffe("snapshot", "status", "--json", file)
	var st struct {
		Zxid string `json:"zxid"`
	}
	if err != nil || json.Unmarshal([]byte(status), &st) != nil {
		t.Fatalf("snapshot status: %v\n%s", err, status)
	}
	backupZxid, err := strconv.ParseInt(strings.TrimPrefix(st.Zxid, "0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}

	c.Stop(5 * time.Second)
	for _, s := range c.Servers {
		cfg := filepath.Join(s.Dir, "zoo.cfg")
		if out, err := giraffe("snapshot", "restore", file, "--config", cfg); err == nil {
			t.Fatalf("restore into member %d's used directory succeeded:\n%s", s.ID, out)
		}
		data := filepath.Join(s.Dir, "data")
		if err := os.Rename(data, data+".old"); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(data, "myid"), []byte(fmt.Sprintln(s.ID)), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := giraffe("snapshot", "restore", file, "--config", cfg)
		if err != nil || !strings.Contains(out, fmt.Sprintf("as member %d of 3: zxid %s", s.ID, st.Zxid)) {
			t.Fatalf("restore of member %d: %v\n%s", s.ID, err, out)
		}
	}
	for _, s := range c.Servers {
		if err := c.Restart(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Leader(c, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers {
		checkRestoredTree(t, s.ClientAddr, before)
	}
	zc := connectZK(t, addrs...)
	if _, err := zc.Create("/after-restore", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	_, stat, err := zc.Get("/after-restore")
	if err != nil {
		t.Fatal(err)
	}
	if stat.Czxid <= backupZxid {
		t.Errorf("a write after the restore got zxid 0x%x, not after the backup's 0x%x", stat.Czxid, backupZxid)
	}
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second))
}

// zkWriters create /bk/wI-N, N = 0, 1, ..., through their connection I,
// one create at a time, recording what was acknowledged.
type zkWriters struct {
	mu     sync.Mutex
	counts []int // creates acknowledged, per writer
	err    error
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

func startZKWriters(conns []*zk.Conn) *zkWriters {
	w := &zkWriters{counts: make([]int, len(conns)), done: make(chan struct{})}
	for i, c := range conns {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-w.done:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", i, n)
				if !w.create(c, name) {
					return
				}
				w.mu.Lock()
				w.counts[i]++
				w.mu.Unlock()
			}
		}()
	}
	return w
}

// create creates /bk/name and reports whether it was acknowledged. A
// create whose outcome a lost connection left unknown (a member that
// stopped serving, a leader change) is sent again until it is answered,
// and NODEEXISTS then means the first one was applied. It returns false,
// recording the error, on any other failure, or when the writers stop.
func (w *zkWriters) create(c *zk.Conn, name string) bool {
	unknown := false
	for {
		_, err := c.Create("/bk/"+name, []byte(name), 0, zk.WorldACL(zk.PermAll))
		switch {
		case err == nil, unknown && errors.Is(err, zk.ErrNodeExists):
			return true
		case errors.Is(err, zk.ErrConnectionClosed):
			unknown = true
		default:
			w.mu.Lock()
			w.err = fmt.Errorf("create %s: %w", name, err)
			w.mu.Unlock()
			return false
		}
		select {
		case <-w.done:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// acked returns how many creates each writer saw acknowledged so far.
func (w *zkWriters) acked() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.counts...)
}

func (w *zkWriters) total() int {
	n := 0
	for _, c := range w.acked() {
		n += c
	}
	return n
}

// waitAcked waits until n creates in all were acknowledged, or a writer
// failed.
func (w *zkWriters) waitAcked(n int) {
	deadline := time.Now().Add(30 * time.Second)
	for w.total() < n && time.Now().Before(deadline) {
		w.mu.Lock()
		failed := w.err != nil
		w.mu.Unlock()
		if failed {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stop stops the writers and returns the first error one met.
func (w *zkWriters) stop() error {
	w.once.Do(func() { close(w.done) })
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// connectZK opens a go-zookeeper session with the first of the servers
// at addrs, moving on to the next when it fails.
func connectZK(t *testing.T, addrs ...string) *zk.Conn {
	t.Helper()
	c, ev, err := zk.Connect(addrs, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(gozk.Quiet{}),
		zk.WithHostProvider(&gozk.InOrder{Addrs: addrs}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(20 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session with %v", addrs)
		}
	}
	return c
}

// writeTokenFile writes an admin token to a new file of mode 0600.
func writeTokenFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(p, []byte("backup-test-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// giraffe runs the giraffe binary with args and returns its output,
// stdout then stderr.
func giraffe(args ...string) (string, error) {
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	return stdout.String() + stderr.String(), err
}
