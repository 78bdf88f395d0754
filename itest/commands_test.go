package itest

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// command GETs ZooKeeper's AdminServer command name from a metrics port
// and decodes its JSON object.
func command(t *testing.T, metricsAddr, name string) map[string]any {
	t.Helper()
	resp, err := http.Get("http://" + metricsAddr + "/commands/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil {
		t.Fatalf("GET /commands/%s on %s: %d\n%s", name, metricsAddr, resp.StatusCode, b)
	}
	return out
}

// TestAdminServerCommandsInEnsemble reads the AdminServer commands from
// the metrics ports of a classic-3 ensemble: leader names the leader on
// every member, monitor reports the roles and the leader's followers,
// voting_view the three members; a follower cut off from the others
// answers srvr, monitor and leader with ZooKeeper's "not currently
// serving" error, and environment as usual.
func TestAdminServerCommandsInEnsemble(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Servers {
		var out map[string]any
		for deadline := time.Now().Add(10 * time.Second); ; {
			out = command(t, s.MetricsAddr, "leader")
			if out["error"] == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server %d: leader: %v", s.ID, out)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if out["command"] != "leader" || out["leader_id"] != float64(leader) || out["is_leader"] != (s.ID == leader) ||
			out["leader_ip"] != "127.0.0.1" {
			t.Errorf("server %d: leader: %v", s.ID, out)
		}
		mon := command(t, s.MetricsAddr, "monitor")
		want := "follower"
		if s.ID == leader {
			want = "leader"
			if mon["followers"] != 2.0 {
				t.Errorf("leader's monitor: followers %v", mon["followers"])
			}
		}
		if mon["server_state"] != want || mon["command"] != "monitor" {
			t.Errorf("server %d: monitor: %v", s.ID, mon)
		}
		if v, _ := command(t, s.MetricsAddr, "voting_view")["current_config"].(map[string]any); len(v) != 3 {
			t.Errorf("server %d: voting_view: %v", s.ID, v)
		}
	}
	x := c.Servers[int(leader)%len(c.Servers)]
	if _, err := c.Fault(x.ID, "isolate"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); command(t, x.MetricsAddr, "srvr")["error"] != notServing; {
		if time.Now().After(deadline) {
			t.Fatalf("srvr of the isolated follower: %v", command(t, x.MetricsAddr, "srvr"))
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, name := range []string{"monitor", "leader", "stats"} {
		if out := command(t, x.MetricsAddr, name); out["error"] != notServing || out["server_state"] != nil {
			t.Errorf("%s of the isolated follower: %v", name, out)
		}
	}
	if out := command(t, x.MetricsAddr, "environment"); out["error"] != nil || out["zookeeper.version"] == nil {
		t.Errorf("environment of the isolated follower: %v", out)
	}
}
