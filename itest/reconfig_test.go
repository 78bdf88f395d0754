package itest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// superDigest is the super user "super" with password "test".
const superDigest = "zookeeper.DigestAuthenticationProvider.superDigest=super:D/InIHSb7yEEbrWz8b9l71RjZJU="

// configVersion reads /zookeeper/config's version line (0 when empty).
func configVersion(t *testing.T, cl *zk.Conn) (int64, string) {
	t.Helper()
	data, _, err := cl.Get("/zookeeper/config")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "version="); ok {
			n, err := strconv.ParseInt(v, 16, 64)
			if err != nil {
				t.Fatalf("version line %q: %v", l, err)
			}
			return n, string(data)
		}
	}
	return 0, string(data)
}

// waitMembers waits until server id's committed membership has exactly
// the servers want.
func waitMembers(t *testing.T, c *launcher.Cluster, id members.ID, want ...members.ID) {
	t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(20 * time.Second)
	for {
		m, err := c.Membership(id)
		var got []members.ID
		if err == nil {
			for _, x := range m.Members {
				got = append(got, x.ID)
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d's membership: %v (%v), want %v", id, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitStatusMembers waits until cluster status reports each server's
// place in the committed membership as want has it (a removed server
// keeps running, but is no member), and the serving leader's conf lists
// exactly the members.
func waitStatusMembers(t *testing.T, c *launcher.Cluster, want map[members.ID]string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := map[members.ID]string{}
		var leader launcher.Status
		for _, st := range c.Status() {
			got[st.ID] = st.Member
			if st.Role == "leader" && st.Serving {
				leader = st
			}
		}
		if fmt.Sprint(got) == fmt.Sprint(want) && leader.ID != members.None {
			conf, err := FourLetter(leader.Address, "conf")
			_, section, ok := strings.Cut(conf, "membership: \n")
			listed := ok
			for id, in := range want {
				listed = listed && strings.Contains(section, fmt.Sprintf("server.%d=", id)) == (in == "yes")
			}
			if err == nil && listed {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("leader %d's conf (%v):\n%s", leader.ID, err, conf)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster status membership %v, want %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestZKReconfig changes a classic-3 ensemble's membership with
// ZooKeeper's reconfig from go-zookeeper, through a member that does not
// lead (which hands the change to the leader): refused without the super
// user, with two servers in one request and with a stale configuration
// version; then server 3 is removed and a fourth server, started as a
// learner waiting for it, is added; every remaining replica ends with the
// same tree.
func TestZKReconfig(t *testing.T) {
	c := StartEnsemble(t, Classic3, "reconfigEnabled=true", superDigest)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var via, gone launcher.Server // two followers: the client's, and the one removed
	for _, s := range c.Servers {
		switch {
		case s.ID == leader:
		case via.ID == members.None:
			via = s
		default:
			gone = s
		}
	}
	cl := zkConnect(t, []string{via.ClientAddr})
	leave := []string{fmt.Sprint(gone.ID)}
	if _, err := cl.IncrementalReconfig(nil, leave, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("reconfig without authorization: %v, want NOAUTH", err)
	}
	if err := cl.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.IncrementalReconfig(nil, []string{fmt.Sprint(via.ID), fmt.Sprint(gone.ID)}, -1); !errors.Is(err, zk.ErrBadArguments) {
		t.Fatalf("reconfig removing two servers: %v, want BADARGUMENTS", err)
	}
	v0, _ := configVersion(t, cl)
	if _, err := cl.IncrementalReconfig(nil, leave, v0+1); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("reconfig from version %x: %v, want BADVERSION", v0+1, err)
	}

	stat, err := cl.IncrementalReconfig(nil, leave, v0)
	if err != nil {
		t.Fatalf("reconfig -remove %d: %v", gone.ID, err)
	}
	v1, cfg := configVersion(t, cl)
	if v1 == v0 || stat.Mzxid != v1 || strings.Contains(cfg, fmt.Sprintf("server.%d=", gone.ID)) {
		t.Fatalf("after removing %d: version %x (stat mzxid %x), config:\n%s", gone.ID, v1, stat.Mzxid, cfg)
	}
	waitMembers(t, c, leader, leader, via.ID)
	waitStatusMembers(t, c, map[members.ID]string{leader: "yes", via.ID: "yes", gone.ID: "no"})
	if _, err := cl.IncrementalReconfig(nil, leave, v0); !errors.Is(err, zk.ErrBadVersion) {
		t.Fatalf("a second reconfig from version %x: %v, want BADVERSION", v0, err)
	}

	learner, err := c.StartLearner(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.IncrementalReconfig(strings.Split(learner.ReconfigSpec(), ","), nil, v1); err != nil {
		t.Fatalf("reconfig -add %s: %v", learner.ReconfigSpec(), err)
	}
	waitMembers(t, c, learner.ID, leader, via.ID, learner.ID)
	_, cfg = configVersion(t, cl)
	if !strings.Contains(cfg, fmt.Sprintf("server.%d=", learner.ID)) || !strings.Contains(cfg, "giraffe.admin."+fmt.Sprint(learner.ID)) {
		t.Fatalf("the configuration lacks server %d:\n%s", learner.ID, cfg)
	}
	// The new member serves and has every write.
	if _, err := cl.Create("/after-reconfig", []byte("x"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	l := zkConnect(t, []string{learner.ClientAddr})
	if _, err := l.Sync("/"); err != nil {
		t.Fatal(err)
	}
	if data, _, err := l.Get("/after-reconfig"); err != nil || !bytes.Equal(data, []byte("x")) {
		t.Fatalf("the added server reads %q, %v", data, err)
	}
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second, gone.ID))
}

// TestReconfigRefusesAChangeNoLiveQuorumCanCommit: with one follower of a
// classic-3 ensemble killed, removing the other would leave a
// configuration whose only other member is down; the leader refuses it
// with NEWCONFIGNOQUORUM, as ZooKeeper does, instead of appending a change
// that would stop the ensemble, and keeps serving writes. Once the killed
// server is back, the same change commits.
func TestReconfigRefusesAChangeNoLiveQuorumCanCommit(t *testing.T) {
	c := StartEnsemble(t, Classic3, "reconfigEnabled=true", superDigest)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var kept, down members.ID
	var leaderAddr string
	for _, s := range c.Servers {
		switch {
		case s.ID == leader:
			leaderAddr = s.ClientAddr
		case kept == members.None:
			kept = s.ID
		default:
			down = s.ID
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := client.Connect(ctx, []string{leaderAddr}, client.WithSessionTimeout(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.AddAuth(ctx, "digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(down); err != nil {
		t.Fatal(err)
	}
	// Once the leader counts only one follower in contact (its last touch
	// older than minSessionTimeout), the change must be refused.
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, err := FourLetter(leaderAddr, "mntr")
		if err == nil && strings.Contains(out, "zk_synced_followers\t1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the leader does not count one follower in contact 20s after server %d was killed (%v):\n%s", down, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	leave := []string{fmt.Sprint(kept)}
	if _, _, err := cl.IncrementalReconfig(ctx, nil, leave, -1); !errors.Is(err, zkproto.ErrNewConfigNoQuorum) {
		t.Fatalf("removing server %d while server %d is down: %v, want NEWCONFIGNOQUORUM", kept, down, err)
	}
	if _, _, err := cl.Create(ctx, "/still-writable", nil, 0, zkproto.OpenACLUnsafe); err != nil {
		t.Fatalf("a write after the refused change: %v", err)
	}
	waitMembers(t, c, leader, 1, 2, 3)

	if err := c.Restart(down); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitLeader(30 * time.Second); err != nil { // every member serving under one leader
		t.Fatal(err)
	}
	if _, _, err := cl.IncrementalReconfig(ctx, nil, leave, -1); err != nil {
		t.Fatalf("removing server %d with server %d back: %v", kept, down, err)
	}
	waitMembers(t, c, leader, leader, down)
}

// TestZKReconfigDisabled: without reconfigEnabled, an ensemble answers
// reconfig RECONFIGDISABLED, even to the super user, and changes nothing.
func TestZKReconfigDisabled(t *testing.T) {
	c := StartEnsemble(t, Classic3, superDigest)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cl := zkConnect(t, []string{c.Servers[0].ClientAddr})
	if err := cl.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.IncrementalReconfig(nil, []string{"3"}, -1); !errors.Is(err, zk.ErrReconfigDisabled) {
		t.Fatalf("reconfig with reconfigEnabled unset: %v, want RECONFIGDISABLED", err)
	}
	waitMembers(t, c, leader, 1, 2, 3)
}

// zkCLI runs ZooKeeper's Java CLI (zkCli) against addr, feeding it
// script, and returns what it printed.
func zkCLI(t *testing.T, lib, addr, script string) string {
	t.Helper()
	jars, err := filepath.Glob(filepath.Join(lib, "*.jar"))
	if err != nil || len(jars) == 0 {
		t.Fatalf("no jars in ZK_LIB=%s", lib)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-cp", strings.Join(jars, ":"),
		"-Dlogback.configurationFile="+filepath.Join(lib, "..", "logback.xml"),
		"org.apache.zookeeper.ZooKeeperMain", "-server", addr)
	cmd.Stdin = strings.NewReader(script + "quit\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkCli: %v:\n%s", err, out)
	}
	return string(out)
}

// TestZKCliReconfig: ZooKeeper's own CLI, connected to the leader, runs
// `reconfig -remove` and `reconfig -add` on a classic-3 ensemble: refused
// before the super user authenticates, then server 3's removal and a new
// server's addition commit and `config` shows each.
func TestZKCliReconfig(t *testing.T) {
	lib := os.Getenv("ZK_LIB")
	if lib == "" {
		t.Skip("ZK_LIB is not set: run through `make test`, which fetches ZooKeeper's jars")
	}
	c := StartEnsemble(t, Classic3, "reconfigEnabled=true", superDigest)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	gone := follower(c, leader)
	addr := byID(t, c, leader).ClientAddr
	out := zkCLI(t, lib, addr, fmt.Sprintf("reconfig -remove %d\naddauth digest super:test\nreconfig -remove %d\nconfig\n", gone.ID, gone.ID))
	if !strings.Contains(out, "Insufficient permission") {
		t.Fatalf("zkCli's reconfig before addauth was not refused:\n%s", out)
	}
	committed, _, ok := strings.Cut(out, "Committed new configuration:")
	if !ok || strings.Contains(out[len(committed):], fmt.Sprintf("server.%d=", gone.ID)) {
		t.Fatalf("zkCli's reconfig -remove %d:\n%s", gone.ID, out)
	}
	var rest []members.ID
	for _, s := range c.Servers {
		if s.ID != gone.ID {
			rest = append(rest, s.ID)
		}
	}
	waitMembers(t, c, leader, rest...)

	learner, err := c.StartLearner(30 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	out = zkCLI(t, lib, addr, "addauth digest super:test\nreconfig -add "+learner.ReconfigSpec()+"\nconfig\n")
	if !strings.Contains(out, "Committed new configuration:") || !strings.Contains(out, fmt.Sprintf("server.%d=%s", learner.ID, strings.Split(learner.PeerAddr, ":")[0])) {
		t.Fatalf("zkCli's reconfig -add:\n%s", out)
	}
	waitMembers(t, c, learner.ID, append(rest, learner.ID)...)
	t.Logf("every replica: %s", waitEqualDigests(t, c, 20*time.Second, gone.ID))
}

// TestConfigNodeShowsTheEnsemble reads /zookeeper/config, where ZooKeeper
// clients (Curator's EnsembleTracker, zkCli's config) find the ensemble,
// through every server of a classic-3 ensemble that has had no
// configuration change: each shows every server with its client address
// and version 0, as ZooKeeper shows an ensemble started from a static
// zoo.cfg, and exists gives that data's length. A standalone server's node
// is empty, as ZooKeeper's is.
func TestConfigNodeShowsTheEnsemble(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, via := range c.Servers {
		cl := zkConnect(t, []string{via.ClientAddr})
		data, stat, err := cl.Get("/zookeeper/config")
		if err != nil {
			t.Fatal(err)
		}
		cfg := string(data)
		for _, s := range c.Servers {
			key := fmt.Sprintf("server.%d=", s.ID)
			i := strings.Index(cfg, key)
			if i < 0 {
				t.Fatalf("server %d's config lacks server %d:\n%s", via.ID, s.ID, cfg)
			}
			line := strings.SplitN(cfg[i+len(key):], "\n", 2)[0]
			// host:quorumPort:electionPort:participant;client, with the
			// two ports different, or ZooKeeper's parser refuses the line.
			server, client, _ := strings.Cut(line, ";")
			parts := strings.Split(server, ":")
			if client != s.ClientAddr || len(parts) != 4 || parts[1] == parts[2] || parts[3] != "participant" {
				t.Fatalf("server %d's config has %q for server %d (client address %s):\n%s", via.ID, line, s.ID, s.ClientAddr, cfg)
			}
		}
		if v, _ := configVersion(t, cl); v != 0 || !strings.HasSuffix(cfg, "version=0\n") {
			t.Fatalf("server %d's config has version %x, want 0:\n%s", via.ID, v, cfg)
		}
		if int(stat.DataLength) != len(data) {
			t.Fatalf("server %d: getData's stat says %d bytes of %d", via.ID, stat.DataLength, len(data))
		}
		if _, stat, err = cl.Exists("/zookeeper/config"); err != nil || int(stat.DataLength) != len(data) {
			t.Fatalf("server %d: exists says %d bytes of %d (%v)", via.ID, stat.DataLength, len(data), err)
		}
	}

	p := StartStandalone(t)
	cl := zkConnect(t, []string{p.Addr})
	if data, stat, err := cl.Get("/zookeeper/config"); err != nil || len(data) != 0 || stat.DataLength != 0 {
		t.Fatalf("a standalone server's config: %q (%d bytes, %v), want it empty", data, stat.DataLength, err)
	}
}
