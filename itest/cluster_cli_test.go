package itest

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// listenOn takes addr, so that the server meant to listen there cannot,
// waiting for a killed server's process to let it go.
func listenOn(t *testing.T, addr string) net.Listener {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			return ln
		}
		if time.Now().After(deadline) {
			t.Fatalf("taking %s: %v", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterStartFailsLoudly: `giraffe cluster start` and `cluster
// restart` exit with status 1, naming the server and showing the end of its
// log, when a server cannot start (here its client port is taken); with
// the port free again, restart brings it back.
func TestClusterStartFailsLoudly(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, err := freeRange(4 * 3)
	if err != nil {
		t.Fatal(err)
	}
	cluster := func(args ...string) (string, error) {
		out, err := exec.Command(bin, append(append([]string{"cluster"}, args...), "--dir", dir)...).CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() { cluster("stop") })
	taken := listenOn(t, fmt.Sprintf("127.0.0.1:%d", base+1)) // server 2's client port
	out, err := cluster("start", "--nodes", "3", "--classic", "--base-port", fmt.Sprint(base), "--wait", "20s")
	taken.Close()
	if exitCode(err) != 1 || !strings.Contains(out, "server 2 exited during start-up") ||
		!strings.Contains(out, "address already in use") {
		t.Fatalf("cluster start with server 2's port taken: %v\n%s", err, out)
	}
	if out, err := cluster("restart", "2"); err != nil {
		t.Fatalf("cluster restart 2 with its port free: %v\n%s", err, out)
	}
	if out, err := cluster("kill", "3"); err != nil {
		t.Fatalf("cluster kill 3: %v\n%s", err, out)
	}
	taken = listenOn(t, fmt.Sprintf("127.0.0.1:%d", base+2)) // server 3's
	defer taken.Close()
	out, err = cluster("restart", "3")
	if exitCode(err) != 1 || !strings.Contains(out, "server 3 exited during start-up") ||
		!strings.Contains(out, "address already in use") {
		t.Fatalf("cluster restart 3 with its port taken: %v\n%s", err, out)
	}
}
