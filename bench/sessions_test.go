package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/internal/testport"
	"github.com/giraffe-coord/giraffe/server"
)

// workerEnv makes the test binary a sessions worker (TestMain), as
// `giraffe bench sessions --worker` makes the giraffe binary one.
const workerEnv = "GIRAFFE_BENCH_SESSIONS_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		if err := ServeSessionsWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startEnsemble starts a classic ensemble of three embedded servers with
// their metrics ports open and no per-address connection limit, and
// returns their client and metrics addresses and data directories.
func startEnsemble(t *testing.T) (clients, metrics, dirs []string) {
	t.Helper()
	base, err := testport.Range(6)
	if err != nil {
		t.Fatal(err)
	}
	var peers []server.Member
	for i := 0; i < 3; i++ {
		peers = append(peers, server.Member{ID: server.ID(i + 1), Peer: fmt.Sprintf("127.0.0.1:%d", base+i)})
	}
	for i := range peers {
		dir := t.TempDir()
		cfg := embed.Standalone(dir)
		cfg.ForceSync = false
		cfg.TickTime = 100 * time.Millisecond
		cfg.MaxClientCnxns = 0
		cfg.MetricsPort = base + 3 + i
		cfg.FourLetterWords = []string{"*"}
		cfg.ServerID = server.ID(i + 1)
		cfg.Ensemble = server.Ensemble{Members: peers, Shape: server.Shape{Classic: true}, Tick: 10 * time.Millisecond}
		s, err := embed.Start(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		clients = append(clients, s.Addr().String())
		metrics = append(metrics, s.Server().MetricsAddr().String())
		dirs = append(dirs, dir)
	}
	// Sessions are refused until a leader is elected and each member
	// serves.
	for _, m := range metrics {
		for deadline := time.Now().Add(30 * time.Second); ; {
			if v, err := scrapeCounter(m, "giraffe_serving"); err == nil && v == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s does not serve 30s after its start", m)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return clients, metrics, dirs
}

// TestSessionsAgainstAnEnsemble runs the three phases of the sessions
// benchmark, small, against a real classic-3 ensemble, with the sessions
// of the idle and expire phases in two worker processes (this test
// binary, re-executed) and the watchers in this one: every session
// connects and stays connected, the servers use CPU and log touches while
// the sessions only ping, every ephemeral goes once its session's
// connection is dropped, and every watcher hears of every change.
func TestSessionsAgainstAnEnsemble(t *testing.T) {
	clients, metrics, dirs := startEnsemble(t)
	pid := os.Getpid()
	source := "auto"
	if runtime.GOOS != "linux" {
		source = "" // only Linux routes all of 127/8 to loopback
	}
	cfg := SessionsConfig{
		Servers: clients, Timeout: time.Second, Root: "/sessions-test",
		Sessions: 300, Settle: 300 * time.Millisecond, Hold: time.Second,
		PIDs: []int{pid, pid, pid}, MetricsURLs: metrics, DataDirs: dirs,
		ExpireSessions: 300, Ephemerals: 3, Rate: 200, WriterSessions: 3, WriterLead: 300 * time.Millisecond,
		Watchers: 200, Rounds: 3, RoundTimeout: 5 * time.Second,
		Source: source, PerSource: 100, PerProcess: 250, Concurrency: 16,
		Worker: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), workerEnv+"=1")
			return cmd
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunSessions(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := json.MarshalIndent(res, "", "  "); err == nil {
		t.Logf("%s", b)
	}

	idle := res.Idle
	if idle.Sessions != 300 || idle.Processes != 2 || idle.Alive != 300 || idle.Lost != 0 || idle.TimeoutMs != 1000 {
		t.Fatalf("idle: %d sessions in %d processes, %d alive, %d lost (%s), timeout %d ms",
			idle.Sessions, idle.Processes, idle.Alive, idle.Lost, idle.LostError, idle.TimeoutMs)
	}
	// 300 sessions pinging every third of a second for a second.
	if idle.Pings < 300 || idle.Pongs < 300 || idle.HoldSeconds < 1 || idle.ClientCPUPercent <= 0 || len(idle.ClientPIDs) != 3 {
		t.Fatalf("idle: %d pings, %d answered in %.2fs; client CPU %.1f%% over %v",
			idle.Pings, idle.Pongs, idle.HoldSeconds, idle.ClientCPUPercent, idle.ClientPIDs)
	}
	// Each server holds its 100 sessions, but for those a refused
	// handshake sent to the next server.
	conns := 0
	for _, s := range idle.PerServer {
		if s.CPUPercent == nil || *s.CPUPercent <= 0 || s.LogBytesPerSec == nil || *s.LogBytesPerSec <= 0 ||
			s.LogFileBytesPerSec == nil || *s.LogFileBytesPerSec <= 0 || s.Connections < 100-idle.Retries {
			t.Fatalf("idle: server %s: %+v", s.Addr, s)
		}
		conns += s.Connections
	}
	if conns < 300 {
		t.Fatalf("idle: the servers count %d connections for 300 sessions", conns)
	}

	exp := res.Expire
	if exp.Sessions != 300 || exp.Processes != 2 || exp.Created != 900 {
		t.Fatalf("expire: %d sessions in %d processes created %d ephemerals", exp.Sessions, exp.Processes, exp.Created)
	}
	// A session outlives its connection by most of its timeout (it last
	// pinged at most a third of it before the drop).
	if exp.FirstGoneSeconds < cfg.Timeout.Seconds()/3 || exp.ExpirySeconds < exp.FirstGoneSeconds {
		t.Fatalf("expire: first ephemeral gone %.2fs after the drop, the last %.2fs", exp.FirstGoneSeconds, exp.ExpirySeconds)
	}
	if w := exp.Writer; w.Ops == 0 || w.Errors != 0 || w.Latency.Max <= 0 || w.Mode != "open" {
		t.Fatalf("expire: writer %+v", w)
	}

	watch := res.Watch
	if watch.Sessions != 200 || watch.Processes != 1 || watch.Expected != 600 || watch.Notified != 600 || watch.Missed != 0 ||
		watch.Unexpected != 0 || len(watch.RoundLastMs) != 3 || len(watch.WriteMs) != 3 || watch.Latency.Max <= 0 ||
		watch.FromSend.P50 <= 0 || watch.FromSend.Max < watch.Latency.Max {
		t.Fatalf("watch: %+v", watch)
	}
	// The slowest notification of the slowest round is the histogram's
	// maximum (to its three significant digits).
	if last := slices.Max(watch.RoundLastMs); math.Abs(last-watch.Latency.Max) > 0.01*last+0.01 {
		t.Fatalf("watch: rounds' last notifications %v ms, histogram max %.3f ms", watch.RoundLastMs, watch.Latency.Max)
	}
}

// TestLogFilesWritten: a log file counts up to its last non-zero byte,
// whether the zeros after it were written (a file extended ahead of its
// writes) or are a hole (ZooKeeper's preallocation writes one byte 64 MiB
// ahead); files not named log.* do not count.
func TestLogFilesWritten(t *testing.T) {
	dir := t.TempDir()
	record := append(bytes.Repeat([]byte{7, 0, 0}, 1000), 0x42)
	zeros := append(slices.Clone(record), make([]byte, 200<<10)...)
	if err := os.WriteFile(filepath.Join(dir, "log.1"), zeros, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "version-2"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "version-2", "log.2"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(record); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0}, 64<<20-1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.WriteFile(filepath.Join(dir, "snapshot.1"), record, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := logFilesWritten(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(2 * len(record)); got != want {
		t.Fatalf("logFilesWritten = %d, want %d", got, want)
	}
	for _, b := range [][]byte{nil, {0}, {1}, {0, 0, 5, 0}, append([]byte{9}, make([]byte, 100)...)} {
		want := bytes.LastIndexFunc(b, func(r rune) bool { return r != 0 })
		if got := lastNonZero(b); got != want {
			t.Fatalf("lastNonZero(%v) = %d, want %d", b, got, want)
		}
	}
}

// TestSourceOf: sessions take the source address after base every
// perSource sessions, across a byte boundary too.
func TestSourceOf(t *testing.T) {
	for _, tc := range []struct {
		base string
		per  int
		i    int
		want string
	}{{"127.0.0.2", 100, 0, "127.0.0.2"}, {"127.0.0.2", 100, 99, "127.0.0.2"}, {"127.0.0.2", 100, 100, "127.0.0.3"},
		{"127.1.0.250", 10, 100, "127.1.1.4"}} {
		ip, err := sourceOf(tc.base, tc.per, tc.i)
		if err != nil || ip.String() != tc.want {
			t.Fatalf("sourceOf(%s, %d, %d) = %v, %v; want %s", tc.base, tc.per, tc.i, ip, err, tc.want)
		}
	}
	if ip, err := sourceOf("", 10, 5); ip != nil || err != nil {
		t.Fatalf("no base: %v, %v", ip, err)
	}
}
