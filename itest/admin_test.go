package itest

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// httpDo sends one request to addr+path, with token as a bearer token
// unless empty, and returns the status and body.
func httpDo(t *testing.T, method, addr, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

func clusterToken(t *testing.T, c *launcher.Cluster) string {
	t.Helper()
	tok, err := adminapi.ReadTokenFile(launcher.TokenFile(c.Spec.Dir))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func byID(t *testing.T, c *launcher.Cluster, id members.ID) launcher.Server {
	t.Helper()
	for _, s := range c.Servers {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no server %d", id)
	return launcher.Server{}
}

// follower returns a server of c other than leader.
func follower(c *launcher.Cluster, leader members.ID) launcher.Server {
	return c.Servers[int(leader)%len(c.Servers)]
}

// checkUnharmed checks that server id was not cut off by a request
// refused at refused, and that the committed membership keeps its n
// members. An isolation would have stopped the server serving within its
// quorum-contact bound (a few ticks) for good, so the server must serve
// at some moment from a second after the request on; a busy machine may
// make it pause serving for a moment, an isolation never ends by itself.
func checkUnharmed(t *testing.T, c *launcher.Cluster, id members.ID, n int, refused time.Time) {
	t.Helper()
	time.Sleep(time.Until(refused.Add(time.Second)))
	for serves := false; !serves; time.Sleep(20 * time.Millisecond) {
		for _, st := range c.Status() {
			serves = serves || (st.ID == id && st.Serving)
		}
		if !serves && time.Since(refused) > 20*time.Second {
			t.Fatalf("server %d has not served since a second after the refused request", id)
		}
	}
	m, err := c.Membership(id)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Members) != n {
		t.Fatalf("membership %+v, want %d members", m.Members, n)
	}
}

// TestMetricsPortRefusesChanges: on an ensemble with fault injection on,
// posting a fault, a departure or a join to the leader's metrics port is
// refused with 405 and changes nothing: no fault is in force, the leader
// is not cut off, the membership keeps its members. The same fault posted
// to the admin port with the token takes the leadership away.
func TestMetricsPortRefusesChanges(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, other := byID(t, c, leader), follower(c, leader)
	refused := time.Now()
	for _, r := range []struct{ path, body string }{
		{adminapi.PathFaults, "isolate"},
		{adminapi.PathLeave, fmt.Sprintf(`{"id":%d}`, other.ID)},
		{adminapi.PathJoin, `{"id":9,"peer":"127.0.0.1:1"}`},
	} {
		if code, body := httpDo(t, http.MethodPost, l.MetricsAddr, r.path, "", r.body); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s to the metrics port: %d %q, want 405", r.path, code, body)
		}
	}
	token := clusterToken(t, c)
	if code, body := httpDo(t, http.MethodGet, l.AdminAddr, adminapi.PathFaults, token, ""); code != http.StatusOK || body != "" {
		t.Fatalf("faults in force after the refused POST: %d %q, want none", code, body)
	}
	checkUnharmed(t, c, leader, 3, refused)

	if code, body := httpDo(t, http.MethodPost, l.AdminAddr, adminapi.PathFaults, token, "isolate"); code != http.StatusOK || body != "isolate" {
		t.Fatalf("POST /faults with the token: %d %q", code, body)
	}
	isolated := time.Now()
	for {
		moved := false
		for _, st := range c.Status() {
			moved = moved || (st.ID == other.ID && st.Serving && st.Leader != leader)
		}
		if moved {
			break
		}
		if time.Since(isolated) > 20*time.Second {
			t.Fatalf("server %d still follows the isolated leader %d", other.ID, leader)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the isolation through the admin port moved the leadership in %v", time.Since(isolated).Round(time.Millisecond))
	if _, err := c.Fault(leader, "heal"); err != nil {
		t.Fatal(err)
	}
}

// TestAdminPortNeedsTheToken: on an ensemble without fault injection, a
// request to the admin port without the token or with another is refused
// with 401, logged with the reason (never the token), and changes
// nothing; a joining server presenting a wrong token is refused and
// exits; /faults answers 404 and no fault takes effect. With the token,
// a server leaves and another joins.
func TestAdminPortNeedsTheToken(t *testing.T) {
	c := StartEnsembleSpec(t, Classic3, nil)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l, other := byID(t, c, leader), follower(c, leader)
	token := clusterToken(t, c)
	wrong := strings.Repeat("0", len(token))
	for _, tok := range []string{"", wrong} {
		for _, r := range []struct{ method, path, body string }{
			{http.MethodPost, adminapi.PathLeave, fmt.Sprintf(`{"id":%d}`, other.ID)},
			{http.MethodPost, adminapi.PathJoin, `{"id":9,"peer":"127.0.0.1:1"}`},
			{http.MethodPost, adminapi.PathFaults, "isolate"},
			{http.MethodGet, adminapi.PathMembership, ""},
		} {
			if code, body := httpDo(t, r.method, l.AdminAddr, r.path, tok, r.body); code != http.StatusUnauthorized {
				t.Errorf("%s %s with token %q: %d %q, want 401", r.method, r.path, tok, code, body)
			}
		}
	}
	log := serverLog(t, l)
	for _, want := range []string{`msg="admin port: request refused" reason="no token"`, `reason="wrong token"`, "remote=127.0.0.1:"} {
		if !strings.Contains(log, want) {
			t.Errorf("the leader's log lacks %q", want)
		}
	}
	if strings.Contains(log, token) || strings.Contains(log, wrong) {
		t.Error("a token is in the leader's log")
	}

	// A server presenting a wrong token cannot join.
	wrongFile := filepath.Join(t.TempDir(), "wrong.token")
	if err := os.WriteFile(wrongFile, []byte(wrong+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	base := c.JoinPorts(0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "server", "--data-dir", t.TempDir(), "--client-addr", "127.0.0.1",
		"--client-port", fmt.Sprint(base), "--peer-port", fmt.Sprint(base+1), "--admin-port", fmt.Sprint(base+3),
		"--admin-token-file", wrongFile, "--join", l.AdminAddr).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "401") {
		t.Fatalf("a join with a wrong token: %v\n%s", err, out)
	}

	refused := time.Now()
	code, body := httpDo(t, http.MethodPost, l.AdminAddr, adminapi.PathFaults, token, "isolate")
	if code != http.StatusNotFound || !strings.Contains(body, "giraffe.faultInjection=true") {
		t.Errorf("POST /faults with the token, fault injection off: %d %q, want 404", code, body)
	}
	if _, err := c.Fault(leader, "isolate"); err == nil || !strings.Contains(err.Error(), "--fault-injection") {
		t.Errorf("cluster fault with fault injection off: %v, want an error saying how to turn it on", err)
	}
	checkUnharmed(t, c, leader, 3, refused)

	if err := c.Leave(other.ID, 30*time.Second); err != nil {
		t.Fatalf("leave with the token: %v", err)
	}
	if m, err := c.Membership(leader); err != nil || len(m.Members) != 2 {
		t.Fatalf("membership after the leave: %+v, %v", m.Members, err)
	}
	s, err := c.Join(60 * time.Second)
	if err != nil {
		t.Fatalf("join with the token: %v", err)
	}
	if m, err := c.Membership(s.ID); err != nil || len(m.Members) != 3 {
		t.Fatalf("membership after the join: %+v, %v", m.Members, err)
	}
}

// TestAdminPortBindsLoopback: a server whose client and metrics ports
// listen on every interface opens its admin port on 127.0.0.1 only, as
// giraffe.adminAddress is not set; from another address of this machine
// the metrics port answers and the admin port does not.
func TestAdminPortBindsLoopback(t *testing.T) {
	ports := make([]int, 3)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	tokenFile := filepath.Join(t.TempDir(), "admin.token")
	if _, err := adminapi.WriteTokenFile(tokenFile); err != nil {
		t.Fatal(err)
	}
	p, err := StartServer(t.TempDir(), ports[0], "--client-addr", "0.0.0.0", "--metrics-port", fmt.Sprint(ports[1]),
		"--admin-port", fmt.Sprint(ports[2]), "--admin-token-file", tokenFile)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if want := fmt.Sprintf("admin=127.0.0.1:%d", ports[2]); !p.Log.Wait(want, 5*time.Second) {
		t.Fatalf("the server does not say %q:\n%s", want, p.Log.String())
	}
	ip := externalIPv4(t)
	if ip == "" {
		t.Log("this machine has no address but loopback: the admin port's address is checked from the server's own report only")
		return
	}
	if nc, err := net.DialTimeout("tcp", net.JoinHostPort(ip, fmt.Sprint(ports[1])), 2*time.Second); err != nil {
		t.Fatalf("the metrics port on %s: %v", ip, err)
	} else {
		nc.Close()
	}
	if nc, err := net.DialTimeout("tcp", net.JoinHostPort(ip, fmt.Sprint(ports[2])), 2*time.Second); err == nil {
		nc.Close()
		t.Fatalf("the admin port answers on %s", ip)
	}
}

// externalIPv4 returns an IPv4 address of this machine other than
// loopback, or "".
func externalIPv4(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}
