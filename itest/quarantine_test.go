package itest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/corrupt"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// quarantineServer is a standalone server process with the paper's
// namespaces and a metrics port, restartable on the same directory.
type quarantineServer struct {
	t             *testing.T
	dir, cfg      string
	port, metrics int
	proc          *Proc
}

func newQuarantineServer(t *testing.T, cfg ...string) *quarantineServer {
	t.Helper()
	qs := &quarantineServer{t: t, dir: t.TempDir()}
	var err error
	if qs.port, err = FreePort(); err != nil {
		t.Fatal(err)
	}
	if qs.metrics, err = FreePort(); err != nil {
		t.Fatal(err)
	}
	qs.cfg = filepath.Join(qs.dir, "zoo.cfg")
	lines := append(slices.Clone(paperNamespaces), cfg...)
	if err := os.WriteFile(qs.cfg, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	qs.start()
	t.Cleanup(func() { qs.proc.Stop() })
	return qs
}

func (qs *quarantineServer) dataDir() string { return filepath.Join(qs.dir, "data") }

func (qs *quarantineServer) start() {
	qs.t.Helper()
	p, err := StartServer(qs.dataDir(), qs.port, "--config", qs.cfg, "--metrics-port", fmt.Sprint(qs.metrics))
	if err != nil {
		qs.t.Fatal(err)
	}
	qs.proc = p
}

func (qs *quarantineServer) connect() *client.Conn {
	qs.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, []string{qs.proc.Addr})
	if err != nil {
		qs.t.Fatal(err)
	}
	qs.t.Cleanup(func() { cl.Close() })
	return cl
}

// corruptLog stops the server and damages namespace 2's newest log
// record.
func (qs *quarantineServer) corruptLog() corrupt.Report {
	qs.t.Helper()
	qs.proc.Stop()
	return qs.corrupt("log")
}

// corrupt damages namespace 2's newest target ("log" or "snapshot") in
// the stopped server's data directory.
func (qs *quarantineServer) corrupt(target string) corrupt.Report {
	qs.t.Helper()
	bin, err := Binary()
	if err != nil {
		qs.t.Fatal(err)
	}
	out, err := exec.Command(bin, "debug", "corrupt", "--data-dir", qs.dataDir(), "--namespace", "2",
		"--target", target, "--seed", "7", "--json").Output()
	if err != nil {
		qs.t.Fatalf("giraffe debug corrupt: %v\n%s", err, out)
	}
	var rep corrupt.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		qs.t.Fatalf("giraffe debug corrupt: %v\n%s", err, out)
	}
	return rep
}

// snapshotFiles lists the server's snapshot files, oldest first, the one
// being written (its temporary file) included.
func (qs *quarantineServer) snapshotFiles() []string {
	all, _ := filepath.Glob(filepath.Join(qs.dataDir(), "snap", "snapshot.*"))
	return all
}

// snapshots lists the server's complete snapshot files, oldest first.
func (qs *quarantineServer) snapshots() []string {
	return slices.DeleteFunc(qs.snapshotFiles(), func(f string) bool { return strings.HasSuffix(f, ".tmp") })
}

// snapshotBegun waits up to d for the server to have begun writing a
// snapshot (its temporary file counts) and reports whether it has.
func (qs *quarantineServer) snapshotBegun(d time.Duration) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(5 * time.Millisecond) {
		if len(qs.snapshotFiles()) > 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// waitSnapshot waits until the server has written a snapshot.
func (qs *quarantineServer) waitSnapshot() {
	qs.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(qs.snapshots()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			qs.t.Fatal("no snapshot written")
		}
	}
}

// status reads the server's namespaces from its metrics port.
func (qs *quarantineServer) status() map[string]adminapi.NamespaceStatus {
	qs.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", qs.metrics, adminapi.PathNamespaces))
	if err != nil {
		qs.t.Fatal(err)
	}
	defer resp.Body.Close()
	var st adminapi.NamespacesStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		qs.t.Fatal(err)
	}
	out := map[string]adminapi.NamespaceStatus{}
	for _, ns := range st.Namespaces {
		out[ns.Root] = ns
	}
	return out
}

// metric returns the Prometheus exposition's line for name{ns="/2"}.
func (qs *quarantineServer) metric(name string) string {
	qs.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", qs.metrics))
	if err != nil {
		qs.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, name+`{ns="/2"}`) {
			return l
		}
	}
	return ""
}

// TestQuarantineContainsADamagedLogRecord damages, on a stopped
// standalone server with the paper's namespaces, the newest log record
// that wrote under /2, once with writes to /1 after it (a record before
// valid ones) and once as the log's last record (which the log cuts off).
// The restarted server serves /1 with every acknowledged write and new
// ones, answers DATAINCONSISTENCY under /2, reports /2 quarantined since
// the damaged record, and keeps it quarantined across a further restart,
// when the damaged record may be gone from the log.
func TestQuarantineContainsADamagedLogRecord(t *testing.T) {
	for _, last := range []bool{false, true} {
		t.Run(fmt.Sprintf("last=%v", last), func(t *testing.T) {
			qs := newQuarantineServer(t)
			cl := qs.connect()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			mustCreate := func(path, data string) {
				if _, _, err := cl.Create(ctx, path, []byte(data), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
					t.Fatalf("create %s: %v", path, err)
				}
			}
			mustCreate("/1/x", "x0")
			for i := range 5 {
				mustCreate(fmt.Sprintf("/2/k%d", i), "v")
			}
			if !last {
				for i := 1; i <= 3; i++ {
					if _, err := cl.Set(ctx, "/1/x", []byte(fmt.Sprintf("x%d", i)), -1); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The session stays open: closing it would log a record after
			// the last one under /2.
			rep := qs.corruptLog()
			if len(rep.Paths) != 1 || rep.Paths[0] != "/2/k4" {
				t.Fatalf("damaged the wrong record: %+v", rep)
			}
			for restart := range 2 {
				qs.start()
				cl := qs.connect()
				want := "x3"
				if last {
					want = "x0"
				}
				if data, _, err := cl.Get(ctx, "/1/x"); err != nil || string(data) != want {
					t.Fatalf("restart %d: /1/x = %q, %v; want %q", restart, data, err, want)
				}
				mustCreate := func(path string) {
					if _, _, err := cl.Create(ctx, path, nil, client.Persistent, zkproto.OpenACLUnsafe); err != nil {
						t.Fatalf("restart %d: create %s: %v", restart, path, err)
					}
				}
				mustCreate(fmt.Sprintf("/1/after%d", restart))
				mustCreate(fmt.Sprintf("/other%d", restart))
				if _, _, err := cl.Get(ctx, "/2/k0"); !errors.Is(err, zkproto.ErrDataInconsistency) {
					t.Fatalf("restart %d: get /2/k0: %v, want DATAINCONSISTENCY", restart, err)
				}
				if _, _, err := cl.Create(ctx, "/2/new", nil, client.Persistent, zkproto.OpenACLUnsafe); !errors.Is(err, zkproto.ErrDataInconsistency) {
					t.Fatalf("restart %d: create /2/new: %v, want DATAINCONSISTENCY", restart, err)
				}
				kids, _, err := cl.Children(ctx, "/")
				if err != nil || !strings.Contains(strings.Join(kids, ","), "2") {
					t.Fatalf("restart %d: children of /: %v, %v", restart, kids, err)
				}
				st := qs.status()
				if st["/2"].State != adminapi.StateQuarantined || fmt.Sprintf("0x%x", st["/2"].QuarantinedSince) != rep.Zxid {
					t.Fatalf("restart %d: /2 is %+v, want quarantined since %s", restart, st["/2"], rep.Zxid)
				}
				if st["/1"].State != adminapi.StateHealthy || st["/"].State != adminapi.StateHealthy {
					t.Fatalf("restart %d: %+v", restart, st)
				}
				if !strings.Contains(qs.proc.Log.String(), "namespace quarantined") {
					t.Fatalf("restart %d: the server does not say why /2 is quarantined:\n%s", restart, qs.proc.Log.String())
				}
				if m := qs.metric("giraffe_namespace_quarantined"); !strings.HasSuffix(m, " 1") {
					t.Fatalf("restart %d: metric %q", restart, m)
				}
				cl.Close()
				qs.proc.Stop()
			}
		})
	}
}

// TestDamagedSnapshotRebuiltFromTheLog damages /2's newest znode in the
// only snapshot of a standalone server with the paper's namespaces: the
// server rebuilds the tree from the whole log (no older snapshot is left
// to fall back to) and serves every acknowledged write of both
// namespaces, with neither quarantined.
func TestDamagedSnapshotRebuiltFromTheLog(t *testing.T) {
	qs := newQuarantineServer(t, "snapCount=20")
	cl := qs.connect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A server snapshots after between snapCount/2 and snapCount entries:
	// writing stops once the first snapshot begins, long before a second
	// could be due.
	created := 0
	for !qs.snapshotBegun(100 * time.Millisecond) {
		if created == 40 {
			t.Fatal("no snapshot after 40 writes with snapCount=20")
		}
		p := fmt.Sprintf("/%d/k%d", 1+created%2, created)
		if _, _, err := cl.Create(ctx, p, []byte(p), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatal(err)
		}
		created++
	}
	qs.waitSnapshot()
	qs.proc.Stop()
	if n := len(qs.snapshots()); n != 1 {
		t.Fatalf("%d snapshots, want 1", n)
	}
	rep := qs.corrupt("snapshot")
	if !strings.HasPrefix(rep.Znode, "/2/") {
		t.Fatalf("damaged %+v", rep)
	}
	qs.start()
	cl = qs.connect()
	for i := range created {
		p := fmt.Sprintf("/%d/k%d", 1+i%2, i)
		if data, _, err := cl.Get(ctx, p); err != nil || string(data) != p {
			t.Fatalf("%s = %q, %v", p, data, err)
		}
	}
	for root, ns := range qs.status() {
		if ns.State != adminapi.StateHealthy {
			t.Fatalf("%s is %+v", root, ns)
		}
	}
	if !strings.Contains(qs.proc.Log.String(), "rebuilding the tree from the whole log") {
		t.Fatalf("the server does not say it rebuilt the tree:\n%s", qs.proc.Log.String())
	}
}

// TestDamagedSnapshotSectionQuarantinesItsNamespace damages /2's newest
// znode in the only snapshot of a standalone server whose log begins after
// that snapshot (a directory made by `giraffe snapshot restore`), so that
// neither an older snapshot nor the log can rebuild /2. The snapshot's
// per-namespace sections (format version 2) keep the damage inside /2's:
// the server loads everything else, serves /1 with every acknowledged
// write (those of the snapshot and those logged after it) and new ones,
// answers DATAINCONSISTENCY under /2, reports it quarantined, and keeps it
// so across a further restart.
func TestDamagedSnapshotSectionQuarantinesItsNamespace(t *testing.T) {
	qs := newQuarantineServer(t, "snapCount=20")
	cl := qs.connect()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(cl *client.Conn, p string) {
		t.Helper()
		if _, _, err := cl.Create(ctx, p, []byte(p), client.Persistent, zkproto.OpenACLUnsafe); err != nil {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	for i := range 30 {
		create(cl, fmt.Sprintf("/%d/k%d", 1+i%2, i))
	}
	qs.waitSnapshot()
	cl.Close()
	qs.proc.Stop()

	// The newest snapshot becomes the whole state of a fresh directory,
	// whose server takes no snapshot of its own here.
	s := qs.snapshots()
	restored := filepath.Join(qs.dir, "restored")
	if out, err := giraffe("snapshot", "restore", s[len(s)-1], "--data-dir", restored); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	if err := os.RemoveAll(qs.dataDir()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(restored, qs.dataDir()); err != nil {
		t.Fatal(err)
	}
	cfg := append(slices.Clone(paperNamespaces), "snapCount=100000")
	if err := os.WriteFile(qs.cfg, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	qs.start()
	cl = qs.connect()
	var ones []string // /1's znodes, each holding its path
	for i := range 30 {
		p := fmt.Sprintf("/%d/k%d", 1+i%2, i)
		if _, _, err := cl.Get(ctx, p); err == nil && i%2 == 0 {
			ones = append(ones, p)
		}
	}
	if len(ones) == 0 {
		t.Fatal("the restored snapshot holds nothing of /1")
	}
	for i := range 4 {
		for _, ns := range []int{1, 2} {
			p := fmt.Sprintf("/%d/logged%d", ns, i)
			create(cl, p)
			if ns == 1 {
				ones = append(ones, p)
			}
		}
	}
	cl.Close()
	qs.proc.Stop()
	if n := len(qs.snapshots()); n != 1 {
		t.Fatalf("%d snapshots, want the restored one alone", n)
	}
	rep := qs.corrupt("snapshot")
	if !strings.HasPrefix(rep.Znode, "/2/") {
		t.Fatalf("damaged %+v", rep)
	}

	for restart := range 2 {
		qs.start()
		cl := qs.connect()
		for _, p := range ones {
			if data, _, err := cl.Get(ctx, p); err != nil || string(data) != p {
				t.Fatalf("restart %d: %s = %q, %v", restart, p, data, err)
			}
		}
		create(cl, fmt.Sprintf("/1/after%d", restart))
		ones = append(ones, fmt.Sprintf("/1/after%d", restart))
		for _, p := range []string{"/2", "/2/logged0", rep.Znode} {
			if _, _, err := cl.Get(ctx, p); !errors.Is(err, zkproto.ErrDataInconsistency) {
				t.Fatalf("restart %d: get %s: %v, want DATAINCONSISTENCY", restart, p, err)
			}
		}
		st := qs.status()
		if st["/2"].State != adminapi.StateQuarantined {
			t.Fatalf("restart %d: /2 is %+v, want quarantined", restart, st["/2"])
		}
		if st["/1"].State != adminapi.StateHealthy || st["/"].State != adminapi.StateHealthy {
			t.Fatalf("restart %d: %+v", restart, st)
		}
		if restart == 0 && !strings.Contains(qs.proc.Log.String(), "loaded the newest snapshot without its damaged namespaces") {
			t.Fatalf("the server does not say what it loaded:\n%s", qs.proc.Log.String())
		}
		cl.Close()
		qs.proc.Stop()
	}
}
