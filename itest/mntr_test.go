package itest

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// mntrKeys are the keys Datadog's and Nagios' ZooKeeper checks read from
// every server, as ZooKeeper's MonitorCommand names them.
var mntrKeys = []string{"zk_version", "zk_avg_latency", "zk_max_latency", "zk_min_latency",
	"zk_packets_received", "zk_packets_sent", "zk_num_alive_connections", "zk_outstanding_requests",
	"zk_server_state", "zk_znode_count", "zk_watch_count", "zk_ephemerals_count",
	"zk_approximate_data_size", "zk_open_file_descriptor_count", "zk_max_file_descriptor_count"}

// leaderKeys are the ones ZooKeeper's leader adds.
var leaderKeys = []string{"zk_followers", "zk_synced_followers", "zk_pending_syncs"}

// mntr asks addr for mntr over TCP and parses its "key<TAB>value" lines,
// failing the test on any other line.
func mntr(t *testing.T, addr string) map[string]string {
	t.Helper()
	out, err := FourLetter(addr, "mntr")
	if err != nil {
		t.Fatal(err)
	}
	kv := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "\t")
		if !ok || !strings.HasPrefix(k, "zk_") || strings.Contains(v, "\t") {
			t.Fatalf("mntr of %s: line %q is not zk_key<TAB>value:\n%s", addr, line, out)
		}
		kv[k] = v
	}
	return kv
}

// number parses a mntr value as ZooKeeper prints it (integers plainly,
// the average latency as a decimal).
func number(t *testing.T, kv map[string]string, key string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(kv[key], 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", key, kv[key], err)
	}
	return f
}

// TestMntrKeys reads mntr from every member of a classic-3 ensemble after
// some requests: each has the keys monitoring tools read, with integer
// values where ZooKeeper prints integers; the leader alone has
// zk_followers, zk_synced_followers and zk_pending_syncs. With a follower
// cut off, the leader's zk_synced_followers falls below zk_followers, and
// comes back once healed.
func TestMntrKeys(t *testing.T) {
	c := StartEnsemble(t, Classic3)
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r, err := DialRaw(c.Servers[leader-1].ClientAddr, 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := 0; i < 5; i++ {
		if _, err := r.Call(zkproto.OpExists, &zkproto.ExistsRequest{Path: "/"}, &zkproto.ExistsResponse{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range c.Servers {
		kv := mntr(t, s.ClientAddr)
		for _, k := range mntrKeys {
			if _, ok := kv[k]; !ok {
				t.Errorf("server %d: mntr lacks %s", s.ID, k)
			}
		}
		for _, k := range mntrKeys[2:] {
			if k == "zk_server_state" {
				continue
			}
			if _, err := strconv.ParseInt(kv[k], 10, 64); err != nil {
				t.Errorf("server %d: %s = %q, not an integer", s.ID, k, kv[k])
			}
		}
		if open, limit := number(t, kv, "zk_open_file_descriptor_count"), number(t, kv, "zk_max_file_descriptor_count"); open < 1 || open >= limit {
			t.Errorf("server %d: %g descriptors open of %g", s.ID, open, limit)
		}
		want := "follower"
		if s.ID == leader {
			want = "leader"
			if number(t, kv, "zk_num_alive_connections") < 1 || number(t, kv, "zk_packets_received") < 5 ||
				number(t, kv, "zk_avg_latency") < 0 || number(t, kv, "zk_max_latency") < number(t, kv, "zk_min_latency") {
				t.Errorf("leader's counters after five requests: %v", kv)
			}
			if kv["zk_followers"] != "2" || kv["zk_pending_syncs"] != "0" {
				t.Errorf("leader: zk_followers %q, zk_pending_syncs %q", kv["zk_followers"], kv["zk_pending_syncs"])
			}
		} else {
			for _, k := range leaderKeys {
				if _, ok := kv[k]; ok {
					t.Errorf("follower %d reports %s", s.ID, k)
				}
			}
		}
		if kv["zk_server_state"] != want {
			t.Errorf("server %d: zk_server_state %q, want %q", s.ID, kv["zk_server_state"], want)
		}
	}
	synced := func(want string) {
		t.Helper()
		var kv map[string]string
		for deadline := time.Now().Add(10 * time.Second); ; {
			kv = mntr(t, c.Servers[leader-1].ClientAddr)
			if kv["zk_synced_followers"] == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("leader's zk_synced_followers is %q, want %s", kv["zk_synced_followers"], want)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if kv["zk_followers"] != "2" {
			t.Fatalf("leader's zk_followers is %q with zk_synced_followers %s", kv["zk_followers"], want)
		}
	}
	synced("2")
	follower := c.Servers[int(leader)%len(c.Servers)].ID
	if _, err := c.Fault(follower, "isolate"); err != nil {
		t.Fatal(err)
	}
	synced("1")
	if _, err := c.Fault(follower, "heal"); err != nil {
		t.Fatal(err)
	}
	synced("2")
}
