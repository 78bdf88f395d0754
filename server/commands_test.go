package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/server"
)

// getCommand GETs /commands/name from base and decodes its JSON object.
func getCommand(t *testing.T, base, token, name string) (int, map[string]any) {
	t.Helper()
	code, body := request(t, http.MethodGet, base+"/commands/"+name, token, "")
	var out map[string]any
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("GET /commands/%s: %d, not a JSON object: %v\n%s", name, code, err, body)
	}
	return code, out
}

// TestAdminServerCommands reads ZooKeeper's AdminServer commands from the
// metrics port of a standalone server that a ZooKeeper client uses: each
// answers its JSON with ZooKeeper's field names, "command" the primary
// name and "error" null; an unknown command answers ZooKeeper's error; the
// stat resets are refused there (403) and run on the admin port with the
// token; /commands lists the commands each port serves.
func TestAdminServerCommands(t *testing.T) {
	const token = "0123456789abcdef"
	s, _ := startLogged(t, func(c *server.Config) { c.AdminTokenFile = writeToken(t, token) })
	zc, _ := connect(t, s.Addr().String())
	if _, err := zc.Create("/e", []byte("x"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := zc.GetW("/e"); err != nil {
		t.Fatal(err)
	}
	sid := float64(zc.SessionID())
	base := "http://" + s.MetricsAddr().String()
	for name, keys := range map[string][]string{
		"ruok":            nil,
		"srvr":            {"version", "read_only", "server_stats", "node_count"},
		"server_stats":    {"version", "server_stats"},
		"stat":            {"server_stats", "connections", "secure_connections"},
		"mntr":            {"version", "avg_latency", "max_latency", "min_latency", "server_state", "znode_count", "num_alive_connections"},
		"conf":            {"client_port", "data_dir", "tick_time", "min_session_timeout", "max_session_timeout"},
		"cons":            {"connections", "secure_connections"},
		"dirs":            {"datadir_size", "logdir_size"},
		"dump":            {"expiry_time_to_session_ids", "session_id_to_ephemeral_paths"},
		"envi":            {"zookeeper.version", "os.name"},
		"isro":            {"read_only"},
		"wchc":            {"session_id_to_watched_paths"},
		"wchp":            {"path_to_session_ids"},
		"wchs":            {"num_connections", "num_paths", "num_total_watches"},
		"gtmk":            {"tracemask"},
		"voting_view":     {"current_config"},
		"watches_by_path": {"path_to_session_ids"},
	} {
		code, out := getCommand(t, base, "", name)
		if code != http.StatusOK || out["error"] != nil {
			t.Errorf("%s: %d %v", name, code, out)
			continue
		}
		if c := commandsPrimary[name]; out["command"] != c {
			t.Errorf("%s: command %v, want %s", name, out["command"], c)
		}
		for _, k := range keys {
			if _, ok := out[k]; !ok {
				t.Errorf("%s lacks %q: %v", name, k, out)
			}
		}
	}
	_, out := getCommand(t, base, "", "monitor")
	if out["server_state"] != "standalone" || out["znode_count"] == nil || out["ephemerals_count"] != 1.0 {
		t.Errorf("monitor: %v", out)
	}
	_, out = getCommand(t, base, "", "cons")
	if cs, _ := out["connections"].([]any); len(cs) != 1 || cs[0].(map[string]any)["session_id"] != sid {
		t.Errorf("cons: %v, want the session 0x%x", out, int64(sid))
	}
	_, out = getCommand(t, base, "", "wchp")
	if ids, _ := out["path_to_session_ids"].(map[string]any)["/e"].([]any); len(ids) != 1 || ids[0] != sid {
		t.Errorf("wchp: %v", out)
	}
	_, out = getCommand(t, base, "", "leader")
	if out["error"] != "server is not initialized" {
		t.Errorf("leader of a standalone server: %v", out)
	}
	code, out := getCommand(t, base, "", "nosuch")
	if code != http.StatusOK || out["error"] != "Unknown command: nosuch" || out["command"] != "nosuch" {
		t.Errorf("unknown command: %d %v", code, out)
	}
	for _, name := range []string{"srst", "stat_reset", "crst"} {
		if code, out := getCommand(t, base, "", name); code != http.StatusForbidden || out["error"] == nil {
			t.Errorf("%s on the metrics port: %d %v, want 403", name, code, out)
		}
		if code, _ := request(t, http.MethodPost, base+"/commands/"+name, "", ""); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s on the metrics port: %d, want 405", name, code)
		}
	}
	admin := "http://" + s.AdminAddr().String()
	if code, _ := request(t, http.MethodGet, admin+"/commands/srvr", "", ""); code != http.StatusUnauthorized {
		t.Errorf("srvr on the admin port without the token: %d, want 401", code)
	}
	if code, out := getCommand(t, admin, token, "srst"); code != http.StatusOK || out["error"] != nil || out["command"] != "stat_reset" {
		t.Errorf("srst on the admin port: %d %v", code, out)
	}
	_, links := request(t, http.MethodGet, base+"/commands", "", "")
	if !strings.Contains(links, `<a href="/commands/monitor">monitor</a>`) || strings.Contains(links, "stat_reset") {
		t.Errorf("the metrics port's /commands:\n%s", links)
	}
	_, links = request(t, http.MethodGet, admin+"/commands/", token, "")
	if !strings.Contains(links, `<a href="/commands/stat_reset">stat_reset</a>`) {
		t.Errorf("the admin port's /commands/:\n%s", links)
	}
}

// commandsPrimary maps the names TestAdminServerCommands uses to
// ZooKeeper's primary names, which answers carry in "command".
var commandsPrimary = map[string]string{"ruok": "ruok", "srvr": "server_stats", "server_stats": "server_stats",
	"stat": "stats", "mntr": "monitor", "conf": "configuration", "cons": "connections", "dirs": "dirs",
	"dump": "dump", "envi": "environment", "isro": "is_read_only", "wchc": "watches", "wchp": "watches_by_path",
	"wchs": "watch_summary", "gtmk": "get_trace_mask", "voting_view": "voting_view", "watches_by_path": "watches_by_path"}

// TestAdminServerOff: with admin.enableServer=false neither port serves
// the commands.
func TestAdminServerOff(t *testing.T) {
	s, _ := startLogged(t, func(c *server.Config) { c.NoAdminServer = true })
	if code, _ := request(t, http.MethodGet, "http://"+s.MetricsAddr().String()+"/commands/ruok", "", ""); code != http.StatusNotFound {
		t.Errorf("ruok with the AdminServer off: %d, want 404", code)
	}
}
