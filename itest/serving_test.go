package itest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// notServing is ZooKeeper's answer to srvr, stat and mntr while its server
// does not serve.
const notServing = "This ZooKeeper instance is not currently serving requests"

// pingUntilClosed pings through r every 100 ms until the server closes the
// connection, and returns when that happened; it fails the test if the
// server still answers at deadline.
func pingUntilClosed(t *testing.T, r *Raw, deadline time.Time) time.Time {
	t.Helper()
	for time.Now().Before(deadline) {
		if _, err := r.Call(zkproto.OpPing, nil, nil); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("ping unanswered but the connection left open: %v", err)
			}
			return time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("the server still answers pings")
	return time.Time{}
}

// refusesClients checks that addr closes a new client's connection without
// answering its handshake.
func refusesClients(t *testing.T, addr string) {
	t.Helper()
	r, err := DialRaw(addr, 4000, 0, nil)
	if err == nil {
		r.Close()
		t.Fatalf("%s opened a session", addr)
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "reset") {
		t.Fatalf("%s: handshake failed with %v, want the connection closed", addr, err)
	}
}

func serverLog(t *testing.T, s launcher.Server) string {
	t.Helper()
	b, err := os.ReadFile(s.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestIsolatedServerStopsServing cuts a classic-3 ensemble's leader off
// from the others. Within a third of its client's session timeout it stops
// answering pings and closes the connection, long before the ensemble
// could expire the session; srvr and mntr then answer ZooKeeper's "not
// currently serving" (never Mode: leader), ruok still answers imok, new
// clients are refused, and the log says why. Healed, it serves again.
func TestIsolatedServerStopsServing(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	id, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	x := c.Servers[id-1]
	const timeoutMs = 3000
	r, err := DialRaw(x.ClientAddr, timeoutMs, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if out, _ := FourLetter(x.ClientAddr, "srvr"); !strings.Contains(out, "Mode: leader") {
		t.Fatalf("srvr of the leader before the cut:\n%s", out)
	}
	if _, err := c.Fault(id, "isolate"); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	closed := pingUntilClosed(t, r, cut.Add(timeoutMs*time.Millisecond))
	t.Logf("the isolated leader closed its client's connection %v after the cut", closed.Sub(cut).Round(time.Millisecond))
	if took := closed.Sub(cut); took >= timeoutMs*time.Millisecond*2/3 {
		t.Fatalf("connection closed %v after the cut: not within the bound (a third of %d ms, plus a touch period)", took, timeoutMs)
	}
	for _, word := range []string{"srvr", "stat", "mntr"} {
		out, err := FourLetter(x.ClientAddr, word)
		if err != nil || !strings.HasPrefix(out, notServing+"\n") || strings.Contains(out, "Mode:") ||
			strings.Contains(out, "zk_server_state") {
			t.Fatalf("%s of the isolated leader: %v\n%s", word, err, out)
		}
	}
	if out, _ := FourLetter(x.ClientAddr, "ruok"); out != "imok" {
		t.Fatalf("ruok: %q", out)
	}
	refusesClients(t, x.ClientAddr)
	if log := serverLog(t, x); !strings.Contains(log, "not serving: closing client connections") ||
		!strings.Contains(log, "no contact with a quorum") {
		t.Fatal("the server's log does not say why it stopped serving")
	}
	if _, err := c.Fault(id, "heal"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := FourLetter(x.ClientAddr, "srvr")
		if strings.Contains(out, "Mode: ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving 20s after the heal:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r2, err := DialRaw(x.ClientAddr, timeoutMs, 0, nil)
	if err != nil {
		t.Fatalf("healed server refuses clients: %v", err)
	}
	r2.Close()
}

// TestRemovedServerClosesItsClients removes a follower from a classic-3
// ensemble (giraffe leave, without stopping its process). Once the change
// commits, the removed server closes its clients' connections, refuses new
// ones, and its log and srvr say it is not in the membership.
func TestRemovedServerClosesItsClients(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	x := c.Servers[int(leader)%len(c.Servers)] // a follower
	r, err := DialRaw(x.ClientAddr, 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	token, err := adminapi.ReadTokenFile(launcher.TokenFile(c.Spec.Dir))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (adminapi.Client{Token: token}).Leave(ctx, []string{c.Servers[leader-1].AdminAddr}, x.ID); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	closed := pingUntilClosed(t, r, left.Add(10*time.Second))
	t.Logf("the removed server closed its client's connection %v after the removal committed",
		closed.Sub(left).Round(time.Millisecond))
	refusesClients(t, x.ClientAddr)
	// It learns of its removal when the change reaches it; the leader stops
	// writing to it as soon as the change is appended, so that may take an
	// election timeout (it campaigns and learns the history).
	var out string
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err = FourLetter(x.ClientAddr, "srvr")
		if err != nil || !strings.HasPrefix(out, notServing+"\n") {
			t.Fatalf("srvr of the removed server: %v\n%s", err, out)
		}
		if strings.Contains(out, "not in the ensemble's committed membership") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("srvr of the removed server does not say why:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if log := serverLog(t, x); !strings.Contains(log, "this server is not in the committed membership") {
		t.Fatal("the removed server's log does not say it was left out")
	}
}

// TestIsolatedFollowerSaysNotServing cuts a follower of a classic-3
// ensemble off with `giraffe cluster fault ID isolate`. Its srvr, stat and
// mntr then answer ZooKeeper's "not currently serving" line: mntr that line
// alone (ZooKeeper's MonitorCommand prints nothing else), srvr and stat
// followed by Giraffe's reason, never a Mode. The rest of the ensemble
// keeps serving, and the follower serves again once healed.
func TestIsolatedFollowerSaysNotServing(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	x := c.Servers[int(leader)%len(c.Servers)] // a follower
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	fault := func(spec string) {
		t.Helper()
		out, err := exec.Command(bin, "cluster", "fault", "--dir", c.Spec.Dir, fmt.Sprint(x.ID), spec).CombinedOutput()
		if err != nil {
			t.Fatalf("giraffe cluster fault %d %s: %v\n%s", x.ID, spec, err, out)
		}
	}
	fault("isolate")
	var out string
	for deadline := time.Now().Add(10 * time.Second); ; {
		out, _ = FourLetter(x.ClientAddr, "srvr")
		if strings.HasPrefix(out, notServing+"\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("srvr of the isolated follower 10s after the cut:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Contains(out, "Mode:") || !strings.Contains(out, "Giraffe not serving: ") {
		t.Fatalf("srvr of the isolated follower:\n%s", out)
	}
	if out, err := FourLetter(x.ClientAddr, "stat"); err != nil || !strings.HasPrefix(out, notServing+"\n") ||
		strings.Contains(out, "Mode:") {
		t.Fatalf("stat of the isolated follower: %v\n%s", err, out)
	}
	if out, err := FourLetter(x.ClientAddr, "mntr"); err != nil || out != notServing+"\n" {
		t.Fatalf("mntr of the isolated follower: %v\n%q", err, out)
	}
	if out, _ := FourLetter(c.Servers[leader-1].ClientAddr, "srvr"); !strings.Contains(out, "Mode: leader") {
		t.Fatalf("srvr of the leader while a follower is cut off:\n%s", out)
	}
	fault("heal")
	for deadline := time.Now().Add(20 * time.Second); ; {
		out, _ = FourLetter(x.ClientAddr, "srvr")
		if strings.Contains(out, "Mode: follower") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not serving 20s after the heal:\n%s", out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
