package main

import (
	"context"
	"net/url"
	"os"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

func TestParseStatCPU(t *testing.T) {
	// A command name may hold spaces and parentheses: only the last ')'
	// ends it. utime 250 and stime 150 ticks are 4 s.
	line := "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 9 0 123 456 789"
	d, err := parseStatCPU(line)
	if err != nil {
		t.Fatal(err)
	}
	if d != 4*time.Second {
		t.Fatalf("got %v, want 4s", d)
	}
	if _, err := parseStatCPU("4242 (x) S 1 2"); err == nil {
		t.Fatal("a short line was accepted")
	}
}

// TestLoadAgainstOneMember runs the load and the leader look-up on an
// etcd member inside the test, and checks the result counts what it did.
func TestLoadAgainstOneMember(t *testing.T) {
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.LogLevel = "error"
	cu, _ := url.Parse("http://127.0.0.1:0")
	pu, _ := url.Parse("http://127.0.0.1:0")
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(startTimeout):
		t.Fatal("the member did not start")
	}
	ep := "http://" + e.Clients[0].Addr().String()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader, err := waitLeader(ctx, []string{ep})
	if err != nil || leader != ep {
		t.Fatalf("leader %q, %v; want %q", leader, err, ep)
	}
	res, err := runLoad(ctx, loadConfig{endpoints: []string{ep}, clients: 2, outstanding: 4, valueSize: 64,
		keys: 4, warmup: 100 * time.Millisecond, duration: 300 * time.Millisecond,
		pids: []int{os.Getpid()}, fsyncDir: t.TempDir(), prefix: "/test"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Errors != 0 || res.Latency.P50 <= 0 || res.ServerCPU == nil || res.Fsync.Syncs == 0 {
		t.Fatalf("implausible result %+v", res)
	}
}
