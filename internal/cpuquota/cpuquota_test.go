package cpuquota

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestQuotaBindsABusyProcess puts a spinning process under a quota of a
// fifth of a CPU and checks that it gets no more than that (with room for
// the last period) and that the group reports throttling.
func TestQuotaBindsABusyProcess(t *testing.T) {
	if err := Available(); err != nil {
		t.Skip(err)
	}
	g, err := New(fmt.Sprintf("cpuquota-test-%d", os.Getpid()), 0.2)
	if err != nil {
		t.Fatal(err)
	}
	spin := exec.Command("sh", "-c", "while :; do :; done")
	if err := spin.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		spin.Process.Kill()
		spin.Wait()
		if err := g.Remove(); err != nil {
			t.Error(err)
		}
	}()
	if err := g.Add(spin.Process.Pid); err != nil {
		t.Fatal(err)
	}
	before := cpuTime(t, spin.Process.Pid)
	start := time.Now()
	time.Sleep(time.Second)
	used := cpuTime(t, spin.Process.Pid) - before
	elapsed := time.Since(start)
	if limit := elapsed/5 + period; used > limit {
		t.Fatalf("a process under 0.2 CPU used %v of CPU in %v (limit %v)", used, elapsed, limit)
	}
	if used == 0 {
		t.Fatal("the process did not run at all")
	}
	throttled, periods, err := g.Throttled()
	if err != nil {
		t.Fatal(err)
	}
	if throttled == 0 || periods < throttled {
		t.Fatalf("throttled in %d of %d periods, want some", throttled, periods)
	}
}

func TestNewRejectsBadArguments(t *testing.T) {
	if _, err := New("x", 0); err == nil {
		t.Error("a quota of 0 CPUs was accepted")
	}
	if _, err := New("../x", 1); err == nil || errors.Is(err, ErrUnavailable) {
		t.Errorf("a name with a path in it: %v", err)
	}
}

// cpuTime is the CPU time process pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, err := ProcessCPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
