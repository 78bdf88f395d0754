package itest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/launcher"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/testport"
)

// The ensembles the real-client tests run against: the smallest classic
// ensemble (one group, a star, like Zab) and a forest of three groups of
// three, where writes go through coordinators.
var (
	Classic3   = members.Shape{Nodes: 3, Classic: true}
	Forest9x33 = members.Shape{Nodes: 9, Trees: 3, Children: 3}
)

// freeRange returns a base port such that base .. base+n-1 were free a
// moment ago (testport.Range).
func freeRange(n int) (int, error) { return testport.Range(n) }

// StartEnsemble starts an ensemble of real server processes with the
// launcher of `giraffe cluster`, fault injection on, and stops it when the
// test ends (showing the servers' logs when the test failed).
func StartEnsemble(t testing.TB, sh members.Shape, extra ...string) *launcher.Cluster {
	t.Helper()
	return StartEnsembleSpec(t, sh, func(s *launcher.Spec) {
		s.FaultInjection = true
		s.Extra = append(s.Extra, extra...)
	})
}

// StartEnsembleSpec is StartEnsemble with the launcher's Spec, the tests'
// defaults filled in, given to edit before the start.
func StartEnsembleSpec(t testing.TB, sh members.Shape, edit func(*launcher.Spec)) *launcher.Cluster {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	spec := launcher.Spec{Shape: sh, Dir: dir, Binary: bin, TickMs: 20, ElectionTicks: 10,
		Extra: []string{"minSessionTimeout=400", "maxSessionTimeout=60000", "extendedTypesEnabled=true",
			"znode.container.checkIntervalMs=200"}}
	if edit != nil {
		edit(&spec)
	}
	// Every server's ports, and room for 4 joins.
	if spec.BasePort, err = freeRange(spec.PortsPerServer() * (spec.Nodes + 4)); err != nil {
		t.Fatal(err)
	}
	c, err := launcher.Start(spec, 30*time.Second)
	if c != nil {
		t.Cleanup(func() {
			if t.Failed() {
				// Go writes every goroutine's stack on SIGQUIT: a server
				// stuck somewhere shows where in its log.
				for _, s := range c.Servers {
					c.Signal(s.ID, syscall.SIGQUIT)
				}
				time.Sleep(300 * time.Millisecond)
			}
			c.Stop(5 * time.Second)
			if t.Failed() {
				dumpLogs(t, dir)
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dumpLogs(t testing.TB, dir string) {
	files, _ := filepath.Glob(filepath.Join(dir, "s*", "server.log"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			// Peer links coming and going repeat on every start and
			// kill and would push the lines that explain a failure out.
			if !strings.Contains(l, "msg=\"transport: ") {
				lines = append(lines, l)
			}
		}
		stack := mainStack(lines)
		for i, l := range lines {
			if strings.HasPrefix(l, "SIGQUIT: quit") {
				lines = lines[:i]
				break
			}
		}
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("--- %s (last lines, peer-link lines left out)\n%s", f, strings.Join(lines, "\n"))
		if stack != "" {
			t.Logf("--- %s: the main goroutine when the test failed\n%s", f, stack)
		}
	}
}

// mainStack returns the main goroutine's stack from the dump a server
// wrote on SIGQUIT, if any: where a server that never finished starting
// is stuck.
func mainStack(lines []string) string {
	for i, l := range lines {
		if !strings.HasPrefix(l, "goroutine 1 ") || !strings.HasSuffix(l, ":") {
			continue
		}
		// The calls, without their file lines.
		var calls []string
		for _, c := range lines[i:] {
			if c == "" {
				break
			}
			if !strings.HasPrefix(c, "\t") {
				calls = append(calls, c)
			}
		}
		return strings.Join(calls, "\n")
	}
	return ""
}

// Leader returns the id of the server that reports itself leader and
// serves, waiting up to timeout.
func Leader(c *launcher.Cluster, timeout time.Duration) (members.ID, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		for _, st := range c.Status() {
			if st.Alive && st.Role == "leader" && st.Serving {
				return st.ID, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return 0, fmt.Errorf("no leader within %v", timeout)
}
