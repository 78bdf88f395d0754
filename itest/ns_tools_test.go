package itest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// nsStatus runs `giraffe ns status --json` on every server of c and
// returns each server's answer, failing the test if the command fails.
func nsStatus(t *testing.T, c *launcher.Cluster) []adminapi.NamespacesStatus {
	t.Helper()
	sts, agree := nsStatusAgree(t, c)
	if !agree {
		t.Fatalf("giraffe ns status: the servers disagree: %+v", sts)
	}
	return sts
}

// nsStatusAgree is nsStatus that also reports whether the command found
// the servers in agreement (it exits with status 1 when two report
// different digests of a namespace at the same last zxid).
func nsStatusAgree(t *testing.T, c *launcher.Cluster) ([]adminapi.NamespacesStatus, bool) {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "ns", "status", "--dir", c.Spec.Dir, "--json").Output()
	agree := err == nil
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 1 {
		err = nil
	}
	if err != nil {
		t.Fatalf("giraffe ns status: %v\n%s", err, out)
	}
	var answers []struct {
		Address string `json:"address"`
		Error   string `json:"error"`
		adminapi.NamespacesStatus
	}
	if err := json.Unmarshal(out, &answers); err != nil {
		t.Fatalf("giraffe ns status: %v\n%s", err, out)
	}
	var sts []adminapi.NamespacesStatus
	for _, a := range answers {
		if a.Error != "" {
			t.Fatalf("giraffe ns status: %s: %s", a.Address, a.Error)
		}
		sts = append(sts, a.NamespacesStatus)
	}
	return sts, agree
}

// waitNSAtOneZxid polls `giraffe ns status` until every server has
// applied the same zxid, and returns their answers at that point.
func waitNSAtOneZxid(t *testing.T, c *launcher.Cluster) []adminapi.NamespacesStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		sts := nsStatus(t, c)
		same := len(sts) == len(c.Servers)
		for _, st := range sts {
			same = same && st.AppliedZxid == sts[0].AppliedZxid
		}
		if same {
			return sts
		}
		if time.Now().After(deadline) {
			t.Fatalf("servers still at different zxids: %+v", sts)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNSEqual checks that every server reports the paper's namespaces,
// healthy, with the same last zxid, node count and digest, and wantNodes
// znodes in each declared namespace.
func checkNSEqual(t *testing.T, sts []adminapi.NamespacesStatus, wantNodes map[string]int) {
	t.Helper()
	want := map[string]string{"/1": "strong", "/2": "weak", "/": "strong"}
	for _, st := range sts {
		if len(st.Namespaces) != len(want) {
			t.Fatalf("server %d reports %d namespaces: %+v", st.ID, len(st.Namespaces), st.Namespaces)
		}
		for i, ns := range st.Namespaces {
			if want[ns.Root] != ns.Level || ns.State != adminapi.StateHealthy {
				t.Fatalf("server %d: namespace %+v, want level %q, healthy", st.ID, ns, want[ns.Root])
			}
			if n, ok := wantNodes[ns.Root]; ok && ns.Nodes != n {
				t.Fatalf("server %d: %s holds %d znodes, want %d", st.ID, ns.Root, ns.Nodes, n)
			}
			first := sts[0].Namespaces[i]
			if ns != first {
				t.Fatalf("at zxid %#x server %d reports %+v, server %d %+v", st.AppliedZxid, st.ID, ns, sts[0].ID, first)
			}
		}
	}
}

// TestNamespaceTools runs the namespace tools on a classic-3 ensemble
// with the paper's namespaces: after writes into both namespaces through
// every server, `giraffe ns status` shows every namespace with the same
// digest on the three servers once they have applied the same zxid, and
// the Prometheus gauges agree with it; `giraffe bench ns` answers its JSON
// with operations in both classes, after which the digests agree again.
func TestNamespaceTools(t *testing.T) {
	c := StartEnsemble(t, Classic3, paperNamespaces...)
	if _, err := Leader(c, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	const perServer = 20
	for i, cl := range connectEach(t, c) {
		for _, root := range []string{"/1", "/2"} {
			for n := 0; n < perServer; n++ {
				p := fmt.Sprintf("%s/s%d-%d", root, i+1, n)
				if _, err := cl.Create(p, []byte(p), 0, zk.WorldACL(zk.PermAll)); err != nil {
					t.Fatal(err)
				}
				if _, err := cl.Set(p, []byte("again"), -1); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	nodes := 1 + perServer*len(c.Servers)
	sts := waitNSAtOneZxid(t, c)
	checkNSEqual(t, sts, map[string]int{"/1": nodes, "/2": nodes})
	var early float64
	for _, s := range c.Servers {
		if got := metric(t, s, `giraffe_namespace_znodes{ns="/2"}`); got != float64(nodes) {
			t.Fatalf("server %d: giraffe_namespace_znodes of /2 is %v, want %d", s.ID, got, nodes)
		}
		early += metric(t, s, `giraffe_namespace_weak_early_replies_total{ns="/2"}`)
	}
	if early == 0 {
		t.Fatal("no weak write of /2 was answered early")
	}

	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, s := range c.Servers {
		addrs = append(addrs, s.ClientAddr)
	}
	out, err := exec.Command(bin, "bench", "ns", "--servers", strings.Join(addrs, ","), "--strong", "3", "--weak", "3",
		"--write-ratio", "0.5", "--warmup", "0s", "--duration", "2s", "--json").Output()
	if err != nil {
		t.Fatalf("giraffe bench ns: %v\n%s", err, out)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(out, &top); err != nil {
		t.Fatalf("giraffe bench ns: %v\n%s", err, out)
	}
	res := map[string]map[string]any{}
	for _, class := range []string{"strong", "weak"} {
		var m map[string]any
		if err := json.Unmarshal(top[class], &m); err != nil {
			t.Fatalf("giraffe bench ns: %s: %v\n%s", class, err, out)
		}
		res[class] = m
	}
	for _, class := range []string{"strong", "weak"} {
		for _, op := range []string{"write", "read"} {
			for _, stat := range []string{"mean", "p50", "p90", "p99", "p999"} {
				key := op + "_" + stat + "_ms"
				if v, ok := res[class][key].(float64); !ok || v <= 0 {
					t.Fatalf("giraffe bench ns: %s.%s = %v\n%s", class, key, res[class][key], out)
				}
			}
		}
		if ops, _ := res[class]["ops"].(float64); ops <= 0 {
			t.Fatalf("giraffe bench ns: no %s operation\n%s", class, out)
		}
		if errs, _ := res[class]["errors"].(float64); errs != 0 {
			t.Fatalf("giraffe bench ns: %v %s errors\n%s", errs, class, out)
		}
	}
	// The benchmark made 16 nodes per client under its namespace's root.
	checkNSEqual(t, waitNSAtOneZxid(t, c), map[string]int{"/1": nodes + 3*16, "/2": nodes + 3*16})
}
