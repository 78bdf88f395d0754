package itest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// setQuota writes a quota on path the way zkCli's setquota does: the
// limits node, then a stats node the server fills with the subtree's
// figures.
func setQuota(t *testing.T, cl *zk.Conn, path, limits string) {
	t.Helper()
	open := zk.WorldACL(zk.PermAll)
	q := "/zookeeper/quota"
	for _, part := range strings.Split(strings.TrimPrefix(path, "/"), "/") {
		q += "/" + part
		if _, err := cl.Create(q, nil, 0, open); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := cl.Create(q+"/zookeeper_limits", []byte(limits), 0, open); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Create(q+"/zookeeper_stats", []byte("count=0,bytes=0"), 0, open); err != nil {
		t.Fatal(err)
	}
}

// quotaStats reads path's zookeeper_stats after a sync.
func quotaStats(t *testing.T, cl *zk.Conn, path string) string {
	t.Helper()
	if _, err := cl.Sync(path); err != nil {
		t.Fatal(err)
	}
	data, _, err := cl.Get("/zookeeper/quota" + path + "/zookeeper_stats")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// isQuotaExceeded reports whether err is ZooKeeper's QUOTAEXCEEDED (-125),
// which go-zookeeper does not name.
func isQuotaExceeded(err error) bool {
	return err != nil && strings.Contains(err.Error(), "-125")
}

// TestQuotaEnsemble: on a classic-3 ensemble with enforceQuota, a hard
// count quota of 2 on /hq (the root counts itself, as in ZooKeeper)
// refuses the third node, a hard byte quota a setData, on any server; the
// stats, kept by every replica in the apply, read the same through
// another server; the replicas' digests are equal; a server killed and
// restarted (from its snapshot and log: snapCount is small) has the same
// stats and digest.
func TestQuotaEnsemble(t *testing.T) {
	c := StartEnsemble(t, Classic3, "enforceQuota=true", "snapCount=5")
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	a := zkConnect(t, []string{c.Servers[0].ClientAddr})
	b := zkConnect(t, []string{c.Servers[1].ClientAddr})
	open := zk.WorldACL(zk.PermAll)
	if _, err := a.Create("/hq", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	setQuota(t, a, "/hq", "count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2")
	if got := quotaStats(t, b, "/hq"); got != "count=1,bytes=0" {
		t.Fatalf("stats after setquota: %q", got)
	}
	if _, err := a.Create("/hq/a", []byte("12345"), 0, open); err != nil {
		t.Fatal(err)
	}
	if got := quotaStats(t, b, "/hq"); got != "count=2,bytes=5" {
		t.Fatalf("stats after a create: %q", got)
	}
	if _, err := b.Create("/hq/b", nil, 0, open); !isQuotaExceeded(err) {
		t.Fatalf("the third node under a hard count quota of 2, through another server: %v, want QUOTAEXCEEDED", err)
	}
	if _, err := a.Create("/hq/b", nil, 0, open); !isQuotaExceeded(err) {
		t.Fatalf("the third node under a hard count quota of 2: %v, want QUOTAEXCEEDED", err)
	}
	if _, err := a.Multi(&zk.CreateRequest{Path: "/free", Acl: open}, &zk.CreateRequest{Path: "/hq/c", Acl: open}); !isQuotaExceeded(err) {
		t.Fatalf("a multi creating the third node: %v, want QUOTAEXCEEDED", err)
	}
	if ok, _, _ := a.Exists("/free"); ok {
		t.Fatal("a refused multi's other create was applied")
	}
	// A byte quota: 8 bytes in all.
	if _, err := a.Set("/zookeeper/quota/hq/zookeeper_limits", []byte("count=-1,bytes=-1=;byteHardLimit=8;countHardLimit=5"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Set("/hq/a", []byte("12345678"), -1); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Set("/hq/a", []byte("123456789"), -1); !isQuotaExceeded(err) {
		t.Fatalf("a setData past a hard byte quota: %v, want QUOTAEXCEEDED", err)
	}
	if _, err := b.Create("/hq/b", nil, 0, open); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete("/hq/b", -1); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*zk.Conn{a, b} {
		if got := quotaStats(t, cl, "/hq"); got != "count=2,bytes=8" {
			t.Fatalf("stats: %q", got)
		}
	}
	digest := waitEqualDigests(t, c, 20*time.Second)

	// Restart a server: it reads its snapshot and log.
	id := c.Servers[2].ID
	if err := c.Kill(id); err != nil {
		t.Fatal(err)
	}
	waitDead(t, c, id)
	if err := c.Restart(id); err != nil {
		t.Fatal(err)
	}
	r := zkConnect(t, []string{c.Servers[2].ClientAddr})
	if got := quotaStats(t, r, "/hq"); got != "count=2,bytes=8" {
		t.Fatalf("stats on the restarted server: %q", got)
	}
	snaps, _ := filepath.Glob(filepath.Join(c.Servers[2].Dir, "data", "replica", "snapshots", "*"))
	t.Logf("before the restart: %s; after: %s; snapshots of the restarted server: %d",
		digest, waitEqualDigests(t, c, 20*time.Second), len(snaps))
	if len(snaps) == 0 {
		t.Fatal("the restarted server had no snapshot")
	}
}

// TestZKCliQuota: ZooKeeper's own CLI sets a hard count quota with
// `setquota -N 2` on a standalone server with enforceQuota; the third
// node (the root counts itself) is refused, `listquota` shows the live
// count, `delquota -N` lifts the limit; after a restart (snapshot and
// log) `listquota` shows the same count.
func TestZKCliQuota(t *testing.T) {
	lib := os.Getenv("ZK_LIB")
	if lib == "" {
		t.Skip("ZK_LIB is not set: run through `make test`, which fetches ZooKeeper's jars")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(cfg, []byte("enforceQuota=true\nsnapCount=5\n4lw.commands.whitelist=*\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	p, err := StartServer(data, port, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop) // zkCLI fails the test at once when ZK_LIB has no jars
	out := zkCLI(t, lib, p.Addr, "create /hq\nsetquota -N 2 /hq\ncreate /hq/a x\ncreate /hq/b\nlistquota /hq\n"+
		"delquota -N /hq\ncreate /hq/b yy\nlistquota /hq\n")
	p.Stop()
	for _, want := range []string{
		"Created /hq/a",
		"Quota has exceeded : /hq/b",
		"Output quota for /hq count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2",
		"Output stat for /hq count=2,bytes=1",
		"Created /hq/b",
		"Output quota for /hq count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=-1",
		"Output stat for /hq count=3,bytes=3",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("zkCli's transcript lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "Created /hq/b") != 1 {
		t.Fatalf("/hq/b created twice:\n%s", out)
	}
	snaps, _ := filepath.Glob(filepath.Join(data, "snap", "*"))
	if len(snaps) == 0 {
		t.Fatal("the server wrote no snapshot")
	}
	p, err = StartServer(data, port, "--config", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	out = zkCLI(t, lib, p.Addr, "listquota /hq\n")
	if !strings.Contains(out, "Output stat for /hq count=3,bytes=3") {
		t.Fatalf("after a restart (%d snapshots), listquota:\n%s", len(snaps), out)
	}
}
