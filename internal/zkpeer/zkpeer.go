// Package zkpeer starts Apache ZooKeeper 3.9 (the peer installed beside the
// repository, whose jars `make setup-java` fetches) for tests that run Giraffe's clients, recipes
// and differential scripts against the real thing.
package zkpeer

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/testport"
)

// Options are how Start runs the server.
type Options struct {
	// ForceSync makes ZooKeeper fsync its log (its default; the tests that
	// only compare behaviour turn it off to go faster).
	ForceSync bool
}

// Start runs a standalone ZooKeeper from the jars in $ZK_LIB (fetched by
// `make setup-java`), waits until it listens, and returns its client
// address; the server is stopped when the test ends. Without ZK_LIB the
// test is skipped.
//
// The port is taken above the kernel's range of ephemeral ports, so that
// no connection of a test running beside this one can already hold it
// (a port chosen inside the range was, now and then, and ZooKeeper failed
// to start). A start that fails anyway is retried on another port.
func Start(t testing.TB, o Options) string {
	t.Helper()
	lib := os.Getenv("ZK_LIB")
	if lib == "" {
		t.Skip("ZK_LIB is not set: run through `make test`, which fetches ZooKeeper")
	}
	peer, err := filepath.Abs(filepath.Join(lib, ".."))
	if err != nil {
		t.Fatal(err)
	}
	var failures []string
	for attempt := 0; attempt < 3; attempt++ {
		addr, err := start(t, peer, o)
		if err == nil {
			return addr
		}
		failures = append(failures, err.Error())
	}
	t.Fatalf("starting ZooKeeper failed three times:\n%s", strings.Join(failures, "\n"))
	return ""
}

// start makes one attempt on a fresh port and directory.
func start(t testing.TB, peer string, o Options) (string, error) {
	portBase := freePortBase()
	sync := "no"
	if o.ForceSync {
		sync = "yes"
	}
	env := append(os.Environ(), "ZK_BASE="+t.TempDir(), fmt.Sprintf("ZK_PORT_BASE=%d", portBase), "ZK_FORCESYNC="+sync)
	stop := func() {
		cmd := exec.Command("bash", filepath.Join(peer, "stop.sh"))
		cmd.Env = env
		cmd.Run()
	}
	cmd := exec.Command("bash", filepath.Join(peer, "run.sh"), "1")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		stop()
		return "", fmt.Errorf("port base %d: %v: %s", portBase, err, out)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", portBase+1)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if nc, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			nc.Close()
			t.Cleanup(stop)
			return addr, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	return "", fmt.Errorf("ZooKeeper did not listen at %s", addr)
}

// freePortBase returns a port base P whose client port P+1 is free now,
// above the ephemeral range when there is room there (and clear of the
// ensemble tests' ports, 10000-32000, otherwise).
func freePortBase() int {
	lo, hi := 40000, 55000
	if _, top := testport.Ephemeral(); top < 64000 {
		lo, hi = top+1, 65000
	}
	for {
		p := lo + rand.IntN(hi-lo)
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p+1)); err == nil {
			ln.Close()
			return p
		}
	}
}
