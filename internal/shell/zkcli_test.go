package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/testport"
	"github.com/giraffe-coord/giraffe/server"
)

// runScript runs script through Run and fails the test unless the
// transcript is want.
func runScript(t *testing.T, s *Shell, out *syncBuffer, script, want string) {
	t.Helper()
	s.Run(t.Context(), strings.NewReader(script), "")
	if got := out.String(); got != want {
		t.Fatalf("transcript:\n%s\nwant:\n%s", got, want)
	}
}

// waitOutput waits until out holds text n times.
func waitOutput(t *testing.T, out *syncBuffer, text string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), text) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d× %q in:\n%s", n, text, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQuotaCommands: setquota, listquota and delquota as zkCli has them,
// against a server that enforces quotas: the records they write and
// print, the warning for a limit already exceeded, the refusals (a quota
// root above or below, a missing path, bad values, the quota subtree
// itself) and the server refusing writes past a hard limit.
func TestQuotaCommands(t *testing.T) {
	s, out := newShell(t, startServer(t, func(c *server.Config) { c.EnforceQuota = true }))
	script := `create /hq
create /hq/a
create /hq/a/b
setquota -N 2 /hq
listquota /hq
create /hq/c
setquota -n 10 /hq
setquota -b 5 /hq/a
setquota -n 5 /
create /other
create /other/x
setquota -B 4 /other/x
setquota -n 5 /other
set /other/x hello
setquota -n 5 /missing
setquota -n 0 /hq
setquota -B -1 /hq
setquota -n ten /hq
setquota -n 1 /zookeeper/quota/hq
setquota -n 1 -N 2 /hq
delquota -N /hq
listquota /hq
create /hq/c
delquota /hq
listquota /hq
delquota /hq
ls /zookeeper/quota
`
	want := `Created /hq
Created /hq/a
Created /hq/a/b
[Warning]: the count quota you create is less than the existing count:3
absolute path is /zookeeper/quota/hq/zookeeper_limits
Output quota for /hq count=-1,bytes=-1=;byteHardLimit=-1;countHardLimit=2
Output stat for /hq count=3,bytes=0
Quota has exceeded : /hq/c
[Warning]: the count quota you create is less than the existing count:3
/hq/a has a parent /hq which has a quota
/ has a child /hq which has a quota
Created /other
Created /other/x
/other has a child /other/x which has a quota
Quota has exceeded : /other/x
/missing does not exist.
the num quota must be greater than zero
the bytes quota must be greater than or equal to zero
NumberFormatException happens when parsing the option value
cannot set a quota under the path: /zookeeper/quota
bad arguments: -n and -N exclude each other
usage: setquota -n|-b|-N|-B VAL PATH   (soft node count, soft bytes, hard node count, hard bytes)
absolute path is /zookeeper/quota/hq/zookeeper_limits
Output quota for /hq count=10,bytes=-1=;byteHardLimit=-1;countHardLimit=-1
Output stat for /hq count=3,bytes=0
Created /hq/c
absolute path is /zookeeper/quota/hq/zookeeper_limits
quota for /hq does not exist.
Quota does not exist for /hq
[other]
`
	runScript(t, s, out, script, want)
}

// TestSessionCommands: getEphemerals lists this session's ephemeral
// nodes only, getAllChildrenNumber counts descendants, whoami prints the
// session's identities.
func TestSessionCommands(t *testing.T) {
	addr := startServer(t)
	s, out := newShell(t, addr)
	other, _ := newShell(t, addr)
	for _, line := range []string{"create /s", "create -e /s/theirs"} {
		if err := other.Exec(t.Context(), line); err != nil {
			t.Fatal(err)
		}
	}
	script := `create -e /s/e1
create /s/p
create -e /s/p/e2
create -e /top
getEphemerals /s
getEphemerals
getEphemerals /none
getAllChildrenNumber /s
getAllChildrenNumber /s/e1
getAllChildrenNumber /none
whoami
addauth digest bob:pw
whoami
whoami extra
`
	want := `Created /s/e1
Created /s/p
Created /s/p/e2
Created /top
[/s/e1, /s/p/e2]
[/s/e1, /s/p/e2, /top]
[]
4
0
Node does not exist: /none
Auth scheme: User
ip: 127.0.0.1
Auth scheme: User
ip: 127.0.0.1
digest: bob
bad arguments
usage: whoami
`
	runScript(t, s, out, script, want)
}

// TestWatchCommands: addWatch sets a persistent watch (recursive unless
// -m PERSISTENT) whose events print as they come; removewatches removes
// the watches of the type it names, each printing its *WatchRemoved
// event, and on a path with no such watch prints zkCli's message.
func TestWatchCommands(t *testing.T) {
	addr := startServer(t)
	s, out := newShell(t, addr)
	other, _ := newShell(t, addr)
	ctx := t.Context()
	exec := func(sh *Shell, line string, ok bool) {
		t.Helper()
		if err := sh.Exec(ctx, line); (err == nil) != ok {
			t.Fatalf("%s: %v (want success: %v)\n%s", line, err, ok, out)
		}
	}
	exec(s, "create /w", true)
	exec(s, "removewatches /w", false)
	exec(s, "addWatch -m bogus /w", false)
	exec(s, "addWatch /w", true)
	exec(s, "addWatch -m persistent /w", true)
	exec(other, "create /w/c", true)
	waitOutput(t, out, "type:NodeCreated path:/w/c\n", 1)
	exec(other, "set /w x", true)
	// Both watches fire on /w itself.
	waitOutput(t, out, "type:NodeDataChanged path:/w\n", 2)
	exec(s, "removewatches /w -d", false)
	exec(s, "get -w /w", true)
	exec(s, "removewatches /w -p", true)
	waitOutput(t, out, "type:PersistentWatchRemoved path:/w\n", 1)
	exec(s, "removewatches /w -p", false)
	exec(s, "removewatches /w -d -l", true)
	waitOutput(t, out, "type:DataWatchRemoved path:/w\n", 1)
	exec(s, "removewatches /w", true)
	waitOutput(t, out, "type:PersistentWatchRemoved path:/w\n", 2)
	exec(s, "removewatches /w -a", false)

	got := out.String()
	for _, want := range []string{
		"Created /w\nKeeperErrorCode = No such watcher for /w\n",
		"bad arguments: mode \"bogus\" is not one of PERSISTENT_RECURSIVE, PERSISTENT\nusage: addWatch [-m MODE] PATH",
		"\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeCreated path:/w/c\n",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("no %q in:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "KeeperErrorCode = No such watcher for /w\n"); n != 4 {
		t.Fatalf("%d No such watcher lines, want 4:\n%s", n, got)
	}
}

// TestConfigStandalone: config reads /zookeeper/config, and reconfig's
// command line is checked before anything is sent; a standalone server
// without reconfigEnabled refuses it.
func TestConfigStandalone(t *testing.T) {
	s, out := newShell(t, startServer(t))
	usage := "usage: " + commands["reconfig"].usage + "\n"
	script := `config -s -w
reconfig -remove 2
reconfig
reconfig -add server.4=h:1:2;3 -members server.1=h:1:2;3
reconfig -file a -members b
reconfig -v zz -remove 2
config extra
`
	s.Run(t.Context(), strings.NewReader(script), "")
	got := out.String()
	// /zookeeper/config's Stat, then the refusals.
	i := strings.Index(got, "numChildren = 0\n")
	if i < 0 || !strings.Contains(got[:i], "dataVersion = ") {
		t.Fatalf("config -s printed no Stat:\n%s", got)
	}
	want := `KeeperErrorCode = Reconfig is disabled
bad arguments: one of -file, -members, -add, -remove is required
` + usage + `bad arguments: Can't use -file or -members together with -add or -remove (mixing incremental and non-incremental modes is not allowed)
` + usage + `bad arguments: Can't use -file and -members together (conflicting non-incremental modes)
` + usage + `bad arguments: -v must be followed by a long (configuration version)
` + usage + `bad arguments
usage: config [-c] [-w] [-s]
`
	if !strings.HasSuffix(got, want) {
		t.Fatalf("transcript:\n%s\nwant it to end with:\n%s", got, want)
	}
}

// ensembleMember is a server of an in-process ensemble.
type ensembleMember struct {
	id           int
	peer, client int
}

// spec is the member as a dynamic configuration line.
func (m ensembleMember) spec() string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d;127.0.0.1:%d", m.id, m.peer, m.peer, m.client)
}

// startEnsemble starts a classic ensemble of three in-process servers
// over loopback TCP that lets the super user (password "test")
// reconfigure it, and returns its members and the leader's index.
func startEnsemble(t *testing.T) ([]ensembleMember, int) {
	t.Helper()
	base, err := testport.Range(6)
	if err != nil {
		t.Fatal(err)
	}
	var ms []ensembleMember
	var peers []server.Member
	for i := range 3 {
		m := ensembleMember{id: i + 1, peer: base + 2*i, client: base + 2*i + 1}
		ms = append(ms, m)
		peers = append(peers, server.Member{ID: server.ID(m.id), Peer: fmt.Sprintf("127.0.0.1:%d", m.peer),
			Client: fmt.Sprintf("127.0.0.1:%d", m.client)})
	}
	for _, m := range ms {
		cfg := embed.Standalone(t.TempDir())
		cfg.ForceSync = false
		cfg.TickTime = 100 * time.Millisecond
		cfg.ClientPort = m.client
		cfg.ServerID = server.ID(m.id)
		cfg.ReconfigEnabled = true
		cfg.SuperDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
		cfg.Ensemble = server.Ensemble{Members: peers, Shape: server.Shape{Classic: true}, Tick: 10 * time.Millisecond}
		srv, err := embed.Start(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { srv.Close() })
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		for i, m := range ms {
			if serverMode(fmt.Sprintf("127.0.0.1:%d", m.client)) == "leader" {
				return ms, i
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serverMode asks a server its role with the srvr four-letter word.
func serverMode(addr string) string {
	kv, _ := launcher.FourLetter(addr, "srvr", 5*time.Second)
	return kv["Mode"]
}

// TestReconfigEnsemble: on a classic-3 ensemble, reconfig is refused
// before the super user authenticates and from a stale version, removes a
// server with -remove (printing the committed configuration and, with -s,
// its Stat; config -w's watch fires), and sends -members and -file's
// server lines (here refused: they would leave one server); config and
// config -c then print the new configuration.
func TestReconfigEnsemble(t *testing.T) {
	ms, li := startEnsemble(t)
	leader, gone, kept := ms[li], ms[(li+1)%3], ms[(li+2)%3]
	s, out := newShell(t, fmt.Sprintf("127.0.0.1:%d", leader.client))
	ctx := t.Context()
	exec := func(line string, ok bool) string {
		t.Helper()
		before := len(out.String())
		if err := s.Exec(ctx, line); (err == nil) != ok {
			t.Fatalf("%s: %v (want success: %v)\n%s", line, err, ok, out)
		}
		return out.String()[before:]
	}
	if got := exec(fmt.Sprintf("reconfig -remove %d", gone.id), false); got != "Insufficient permission : \n" {
		t.Fatalf("reconfig without authorization printed %q", got)
	}
	exec("addauth digest super:test", true)
	if got := exec(fmt.Sprintf("reconfig -v 1 -remove %d", gone.id), false); got != "version No is not valid : \n" {
		t.Fatalf("reconfig from a stale version printed %q", got)
	}
	exec("config -w", true)
	// config -w's event prints when it comes, maybe before reconfig's
	// answer.
	event := "\nWATCHER::\n\nWatchedEvent state:SyncConnected type:NodeDataChanged path:/zookeeper/config\n"
	got := strings.Replace(exec(fmt.Sprintf("reconfig -s -remove %d", gone.id), true), event, "", 1)
	version := regexp.MustCompile(`\nversion=([0-9a-f]+)\n`).FindStringSubmatch(got)
	if version == nil || !strings.HasPrefix(got, "Committed new configuration:\n") ||
		strings.Contains(got, fmt.Sprintf("server.%d=", gone.id)) ||
		!strings.Contains(got, fmt.Sprintf("\nserver.%d=127.0.0.1:%d:0:participant;127.0.0.1:%d\n", kept.id, kept.peer, kept.client)) ||
		!strings.Contains(got, "\nmZxid = 0x"+version[1]+"\n") {
		t.Fatalf("reconfig -s -remove %d printed:\n%s", gone.id, got)
	}
	waitOutput(t, out, event, 1)

	cfg := exec("config", true)
	if !strings.HasPrefix(got, "Committed new configuration:\n"+cfg) {
		t.Fatalf("config printed:\n%s\nreconfig:\n%s", cfg, got)
	}
	lo, hi := leader, kept
	if lo.id > hi.id {
		lo, hi = hi, lo
	}
	if got, want := exec("config -c", true), fmt.Sprintf("%s 127.0.0.1:%d,127.0.0.1:%d\n", version[1], lo.client, hi.client); got != want {
		t.Fatalf("config -c printed %q, want %q", got, want)
	}

	// One server left would be too few: refused, whichever way the new
	// membership is given.
	if got := exec("reconfig -members "+leader.spec(), false); got != "Arguments are not valid : \n" {
		t.Fatalf("reconfig -members printed %q", got)
	}
	file := filepath.Join(t.TempDir(), "zoo.cfg.dynamic")
	if err := os.WriteFile(file, []byte("# one server\n"+leader.spec()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := exec("reconfig -file "+file, false); got != "Arguments are not valid : \n" {
		t.Fatalf("reconfig -file printed %q", got)
	}
	if got := exec("reconfig -file "+file+".missing", false); !strings.HasPrefix(got, "bad arguments: Error processing "+file+".missing") {
		t.Fatalf("reconfig -file of a missing file printed %q", got)
	}
}
