package server

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestEnsembleKeys reads the ensemble part of zoo.cfg: ZooKeeper's
// server.N lines (with and without an election port and a client
// address), myid, and Giraffe's keys, then what Validate derives.
func TestEnsembleKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines string
		myid  string
		want  Ensemble // Members, Shape, Tick and ElectionTicks compared
		self  ID
		err   string
	}{
		{name: "forest with admin ports and timers", lines: `
server.1=10.0.0.1:3001:3888;2181
server.2=10.0.0.2:3002;10.0.1.2:2182
server.3=10.0.0.3:3003
giraffe.admin.1=10.0.0.1:7001
giraffe.admin.3=10.0.0.3:7003
giraffe.trees=3
giraffe.children=2
giraffe.tickMs=40
giraffe.electionTicks=12
serverId=2`,
			want: Ensemble{Members: []Member{
				{ID: 1, Peer: "10.0.0.1:3001", Client: "10.0.0.1:2181", Admin: "10.0.0.1:7001"},
				{ID: 2, Peer: "10.0.0.2:3002", Client: "10.0.1.2:2182"},
				{ID: 3, Peer: "10.0.0.3:3003", Admin: "10.0.0.3:7003"}},
				Shape: Shape{Nodes: 3, Trees: 3, Children: 2}, Tick: 40 * time.Millisecond, ElectionTicks: 12},
			self: 2},
		{name: "myid, defaults, classic below the trees", lines: `
server.1=h:3001
server.2=h:3002
giraffe.trees=3
giraffe.children=3`, myid: "2\n",
			want: Ensemble{Members: []Member{{ID: 1, Peer: "h:3001"}, {ID: 2, Peer: "h:3002"}},
				Shape: Shape{Nodes: 2, Trees: 3, Children: 3, Classic: true}, Tick: 25 * time.Millisecond, ElectionTicks: 8},
			self: 2},
		{name: "one server line is standalone", lines: "server.1=h:3001"},
		{name: "id out of range", lines: "server.256=h:3001", err: "server id must be in [1,255]"},
		{name: "negative id", lines: "server.-1=h:3001", err: "server id must be in [1,255]"},
		{name: "no peer port", lines: "server.1=h", err: "expected host:peerPort"},
		{name: "twice", lines: "server.1=h:1\nserver.1=h:2\nserverId=1", err: "server.1 given twice"},
		{name: "not among the lines", lines: "server.1=h:1\nserver.2=h:2\nserverId=3", err: "not among the server.N lines"},
		{name: "no myid", lines: "server.1=h:1\nserver.2=h:2", err: "needs serverId or"},
		{name: "bad admin id", lines: "giraffe.admin.x=h:7", err: "bad server id"},
		{name: "election ticks too few", lines: "server.1=h:1\nserver.2=h:2\nserverId=1\ngiraffe.electionTicks=4", err: "must be > 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.myid != "" {
				os.WriteFile(filepath.Join(dir, "myid"), []byte(tc.myid), 0o644)
			}
			path := filepath.Join(dir, "zoo.cfg")
			os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644)
			cfg := DefaultConfig()
			_, err := LoadConfigFile(path, &cfg)
			if err == nil {
				err = cfg.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := cfg.Ensemble
			got := Ensemble{Members: e.Members, Shape: e.Shape, Tick: e.Tick, ElectionTicks: e.ElectionTicks}
			if len(tc.want.Members) == 0 {
				if cfg.Replicated() {
					t.Fatalf("replicated: %+v", e)
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ensemble %+v\nwant %+v", got, tc.want)
			}
			if cfg.ServerID != tc.self || cfg.Self().ID != tc.self {
				t.Errorf("server id %d (self %+v), want %d", cfg.ServerID, cfg.Self(), tc.self)
			}
		})
	}
}

// TestAdminKeys reads the admin port's keys and the token file they name:
// a start-up error names the file and what is wrong with it (a file group
// or others can access, an empty token, a missing file), and nothing but
// a token file that passes opens the admin port.
func TestAdminKeys(t *testing.T) {
	dir := t.TempDir()
	token := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return p
	}
	good := token("good", "t0ken\n", 0o600)
	for _, tc := range []struct {
		name, lines string
		want        Config // AdminPort, AdminAddr, AdminTokenFile, FaultInjection, adminToken compared
		host        string // adminHost()
		err         string
	}{
		{name: "defaults", want: Config{}, host: "127.0.0.1"},
		{name: "all keys", lines: "giraffe.adminPort=7100\ngiraffe.adminAddress=10.0.0.5\n" +
			"giraffe.adminTokenFile=" + good + "\ngiraffe.faultInjection=true",
			want: Config{AdminPort: 7100, AdminAddr: "10.0.0.5", AdminTokenFile: good, FaultInjection: true, adminToken: "t0ken"},
			host: "10.0.0.5"},
		{name: "fault injection off", lines: "giraffe.faultInjection=false", want: Config{}, host: "127.0.0.1"},
		{name: "bad fault switch", lines: "giraffe.faultInjection=yes please", err: "giraffe.faultInjection"},
		{name: "bad port", lines: "giraffe.adminPort=seven", err: "giraffe.adminPort"},
		{name: "port out of range", lines: "giraffe.adminPort=70000", err: "giraffe.adminPort 70000 out of range"},
		{name: "token readable by group", lines: "giraffe.adminTokenFile=" + token("group", "t\n", 0o640),
			err: "accessible by group or others (mode 0640)"},
		{name: "token readable by others", lines: "giraffe.adminTokenFile=" + token("others", "t\n", 0o644),
			err: "accessible by group or others (mode 0644)"},
		{name: "empty token", lines: "giraffe.adminTokenFile=" + token("empty", "\n", 0o600), err: "is empty"},
		{name: "missing token file", lines: "giraffe.adminTokenFile=" + filepath.Join(dir, "nowhere"), err: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "zoo.cfg")
			os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644)
			cfg := DefaultConfig()
			_, err := LoadConfigFile(path, &cfg)
			if err == nil {
				err = cfg.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := Config{AdminPort: cfg.AdminPort, AdminAddr: cfg.AdminAddr, AdminTokenFile: cfg.AdminTokenFile,
				FaultInjection: cfg.FaultInjection, adminToken: cfg.adminToken}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if h := cfg.adminHost(); h != tc.host {
				t.Errorf("admin host %q, want %q", h, tc.host)
			}
		})
	}
}

// TestAdminServerKeys maps ZooKeeper's AdminServer keys: admin.serverPort
// opens the metrics port, where the commands are, unless a metrics port
// key sets it, in either order; admin.enableServer=false turns the
// commands off.
func TestAdminServerKeys(t *testing.T) {
	for _, tc := range []struct {
		lines   string
		metrics int
		off     bool
	}{
		{"", 0, false},
		{"admin.serverPort=8080", 8080, false},
		{"admin.serverPort=8080\nmetricsProvider.httpPort=7000", 7000, false},
		{"metricsProvider.httpPort=7000\nadmin.serverPort=8080", 7000, false},
		{"admin.enableServer=false\nadmin.serverPort=8080", 8080, true},
		{"admin.enableServer=true", 0, false},
	} {
		path := filepath.Join(t.TempDir(), "zoo.cfg")
		os.WriteFile(path, []byte(tc.lines+"\n"), 0o644)
		cfg := DefaultConfig()
		ignored, err := LoadConfigFile(path, &cfg)
		if err != nil || ignored.Count() > 0 {
			t.Fatalf("%q: %v, ignored %v", tc.lines, err, ignored)
		}
		if cfg.MetricsPort != tc.metrics || cfg.NoAdminServer != tc.off {
			t.Errorf("%q: metrics port %d, NoAdminServer %v; want %d, %v", tc.lines, cfg.MetricsPort, cfg.NoAdminServer, tc.metrics, tc.off)
		}
	}
}

// TestNamespaceKeys reads giraffe.namespace.NAME=LEVEL lines; a bad name
// or level is an error that names the key.
func TestNamespaceKeys(t *testing.T) {
	for _, tc := range []struct {
		name, lines, want, err string
	}{
		{name: "none", lines: "", want: "none"},
		{name: "the paper's two", lines: "giraffe.namespace.2=weak\ngiraffe.namespace.1=strong", want: "1=strong,2=weak"},
		{name: "later line wins", lines: "giraffe.namespace.2=weak\ngiraffe.namespace.2 = strong", want: "2=strong"},
		{name: "slash", lines: "giraffe.namespace.a/b=weak", err: "giraffe.namespace.a/b: namespace name"},
		{name: "system subtree", lines: "giraffe.namespace.zookeeper=strong", err: "giraffe.namespace.zookeeper: namespace name"},
		{name: "empty name", lines: "giraffe.namespace.=weak", err: "giraffe.namespace.: namespace name is empty"},
		{name: "relative", lines: "giraffe.namespace...=weak", err: "giraffe.namespace..."},
		{name: "bad level", lines: "giraffe.namespace.2=eventual", err: `giraffe.namespace.2: level "eventual"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "zoo.cfg")
			os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644)
			cfg := DefaultConfig()
			ignored, err := LoadConfigFile(path, &cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || ignored.Count() > 0 {
				t.Fatalf("err %v, ignored %v", err, ignored)
			}
			if got := cfg.Namespaces.String(); got != tc.want {
				t.Fatalf("namespaces %s, want %s", got, tc.want)
			}
		})
	}
}

// TestWeakModeKey reads giraffe.weakMode: shortcircuit by default, off,
// dynamicfsync; anything else is refused with the key named.
func TestWeakModeKey(t *testing.T) {
	for _, tc := range []struct {
		name, lines, err string
		want             WeakMode
	}{
		{name: "default", lines: "", want: WeakShortCircuit},
		{name: "shortcircuit", lines: "giraffe.weakMode=shortcircuit", want: WeakShortCircuit},
		{name: "off", lines: "giraffe.weakMode=off", want: WeakOff},
		{name: "dynamicfsync", lines: "giraffe.weakMode=dynamicfsync", want: WeakDynamicFsync},
		{name: "unknown", lines: "giraffe.weakMode=eventual", err: `giraffe.weakMode: weak mode "eventual"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "zoo.cfg")
			os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644)
			cfg := DefaultConfig()
			_, err := LoadConfigFile(path, &cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.WeakMode != tc.want {
				t.Fatalf("mode %v, %v; want %v", cfg.WeakMode, err, tc.want)
			}
		})
	}
}

// TestOperationsKeys reads reconfigEnabled, skipACL and enforceQuota, in
// ZooKeeper's spellings (zoo.cfg keys and system property names), and
// their defaults (all off, as in ZooKeeper).
func TestOperationsKeys(t *testing.T) {
	for _, tc := range []struct {
		lines                    string
		reconfig, skip, enforced bool
	}{
		{lines: "tickTime=2000"},
		{lines: "reconfigEnabled=true\nskipACL=yes\nenforceQuota=true", reconfig: true, skip: true, enforced: true},
		{lines: "zookeeper.skipACL=no\nzookeeper.enforceQuota=true", enforced: true},
	} {
		path := filepath.Join(t.TempDir(), "zoo.cfg")
		if err := os.WriteFile(path, []byte(tc.lines+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		ignored, err := LoadConfigFile(path, &c)
		if err != nil || ignored.Count() > 0 {
			t.Fatalf("%q: %v, ignored %v", tc.lines, err, ignored)
		}
		if c.ReconfigEnabled != tc.reconfig || c.SkipACL != tc.skip || c.EnforceQuota != tc.enforced {
			t.Errorf("%q: reconfigEnabled %v skipACL %v enforceQuota %v", tc.lines, c.ReconfigEnabled, c.SkipACL, c.EnforceQuota)
		}
	}
}

// TestConfigTypos: keys ZooKeeper reads and Giraffe does not are told
// from keys nothing reads, each unknown one with the known key nearest in
// spelling; strict configuration (the file's giraffe.strictConfig or the
// caller's flag) refuses the unknown ones.
func TestConfigTypos(t *testing.T) {
	path := filepath.Join(t.TempDir(), "zoo.cfg")
	lines := "tickTme=2000\ninitLimit=10\nssl.crl=true\nzookeeper.preAllocSize=65536\n" +
		"giraffe.namespce.2=weak\nfrobnicate=1\nclientPort=2181\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	u, err := LoadConfigFile(path, &c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u.ZooKeeper, []string{"initLimit", "ssl.crl", "zookeeper.preAllocSize"}) {
		t.Errorf("ZooKeeper keys %v", u.ZooKeeper)
	}
	want := []UnknownKey{{"tickTme", "tickTime"}, {"giraffe.namespce.2", "giraffe.namespace.NAME"}, {"frobnicate", ""}}
	if !slices.Equal(u.Unknown, want) {
		t.Errorf("unknown keys %v, want %v", u.Unknown, want)
	}
	if err := u.Err(false); err != nil {
		t.Errorf("not strict: %v", err)
	}
	err = u.Err(true)
	if err == nil || !strings.Contains(err.Error(), "tickTme (did you mean tickTime?)") || !strings.Contains(err.Error(), "frobnicate") {
		t.Errorf("strict: %v", err)
	}

	if err := os.WriteFile(path, []byte("giraffe.strictConfig=true\n"+lines), 0o644); err != nil {
		t.Fatal(err)
	}
	c = DefaultConfig()
	u, err = LoadConfigFile(path, &c)
	if err != nil || !c.StrictConfig || u.Err(c.StrictConfig) == nil {
		t.Errorf("giraffe.strictConfig=true: load %v, strict %v, check %v", err, c.StrictConfig, u.Err(c.StrictConfig))
	}
}

// TestSuggestedKeysAreRead: every key offered as a suggestion is one
// Config.set applies (the families with a variable part aside), so the
// list cannot offer a key Giraffe ignores.
func TestSuggestedKeysAreRead(t *testing.T) {
	for _, k := range giraffeKeys {
		if strings.HasSuffix(k, ".NAME") || strings.HasSuffix(k, ".N") {
			continue
		}
		c := DefaultConfig()
		known, _ := c.set(k, "1")
		if !known {
			t.Errorf("suggested key %s is not read", k)
		}
	}
}

// TestGCHeadroomKey reads giraffe.gcHeadroomMB: 256 by default, 0 turns
// it off, a negative number or a word is refused with the key named.
func TestGCHeadroomKey(t *testing.T) {
	for _, tc := range []struct {
		name, lines, err string
		want             int
	}{
		{name: "default", want: DefaultGCHeadroomMB},
		{name: "set", lines: "giraffe.gcHeadroomMB=64", want: 64},
		{name: "off", lines: "giraffe.gcHeadroomMB=0", want: 0},
		{name: "negative", lines: "giraffe.gcHeadroomMB=-1", err: "giraffe.gcHeadroomMB"},
		{name: "word", lines: "giraffe.gcHeadroomMB=lots", err: "giraffe.gcHeadroomMB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "zoo.cfg")
			if err := os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := DefaultConfig()
			_, err := LoadConfigFile(path, &cfg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.GCHeadroomMB != tc.want {
				t.Fatalf("headroom %d MiB, %v; want %d", cfg.GCHeadroomMB, err, tc.want)
			}
		})
	}
}
