package itest

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/giraffe-coord/giraffe/bench/hclocks"
	"github.com/giraffe-coord/giraffe/internal/cpuquota"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// TestHCBenchCommand runs `giraffe bench hc --test 1` briefly as a
// process: the JSON result has the documented shape and real figures,
// the two standbys were recruited (each serves a client's domain, and
// each client keeps one worker session), and every server the command
// started is gone when it exits. With a writable cgroup it runs again
// under a CPU quota per ensemble and checks that no ensemble used more.
func TestHCBenchCommand(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	const clients, locks = 3, 20
	run := func(t *testing.T, quota string) hclocks.Result {
		base, err := freeRange(3*100 + 20)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "hc")
		cmd := exec.Command(bin, "bench", "hc", "--test", "1", "--clients", strconv.Itoa(clients),
			"--locks", strconv.Itoa(locks), "--warmup", "500ms", "--duration", "2s", "--json", "--quiet",
			"--cpu-per-ensemble", quota, "--dir", dir, "--base-port", strconv.Itoa(base))
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("bench hc: %v\n%s", err, stderr)
		}
		var shape map[string]any
		if err := json.Unmarshal(out, &shape); err != nil {
			t.Fatalf("output %q: %v", out, err)
		}
		for _, k := range []string{"test", "ops_per_s", "sessions_per_client", "session_expiries"} {
			if _, ok := shape[k].(float64); !ok {
				t.Errorf("JSON field %q is %v, want a number", k, shape[k])
			}
		}
		var res hclocks.Result
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"master", "w1", "w2", "w3"} {
			c, err := launcher.Load(filepath.Join(dir, id))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range c.Servers {
				if syscall.Kill(s.PID, 0) == nil && !exitedPID(s.PID) {
					t.Errorf("%s: server %d (pid %d) still runs after the command", id, s.ID, s.PID)
				}
			}
		}
		return res
	}
	check := func(t *testing.T, res hclocks.Result) {
		if res.Test != 1 || !res.Recruitment || !res.Locality {
			t.Errorf("test %d (recruitment %v, locality %v), want test 1 with both", res.Test, res.Recruitment, res.Locality)
		}
		if res.Ops <= 0 || res.OpsPerSec <= 0 || res.Seconds < 1.5 {
			t.Errorf("%d ops, %.1f ops/s in %.1fs: nothing measured", res.Ops, res.OpsPerSec, res.Seconds)
		}
		if res.Errors != 0 {
			t.Errorf("%d failed operations over disjoint locks", res.Errors)
		}
		if res.SessionsPerClient != 1 {
			t.Errorf("%.2f worker sessions per client, want 1 (a domain per client, on its own worker)", res.SessionsPerClient)
		}
		workers := map[string]hclocks.Ensemble{}
		for _, e := range res.Ensembles {
			workers[e.ID] = e
		}
		for _, id := range []string{"w1", "w2", "w3"} {
			e, ok := workers[id]
			if !ok || e.Locks != locks || e.CPUSeconds <= 0 {
				t.Errorf("worker %s: %+v (present %v), want %d locks and CPU used serving them", id, e, ok, locks)
			}
		}
	}
	t.Run("without quotas", func(t *testing.T) {
		check(t, run(t, "0"))
	})
	t.Run("with quotas", func(t *testing.T) {
		if err := cpuquota.Available(); err != nil {
			t.Skip(err)
		}
		const quota = 0.5
		res := run(t, strconv.FormatFloat(quota, 'f', -1, 64))
		check(t, res)
		if res.CPUPerEnsemble != quota {
			t.Errorf("cpu_per_ensemble %v, want %v", res.CPUPerEnsemble, quota)
		}
		// One quota period and the 10 ms granularity of the counters
		// beyond the budget.
		limit := quota*res.Seconds + 0.1 + 0.03
		for _, e := range res.Ensembles {
			if e.CPUSeconds > limit {
				t.Errorf("%s used %.2f CPU-s in %.1fs under %.2f CPU (limit %.2f)", e.ID, e.CPUSeconds, res.Seconds, quota, limit)
			}
		}
	})
}

// exitedPID reports whether pid is a zombie (exited, not yet reaped).
func exitedPID(pid int) bool {
	b, err := exec.Command("ps", "-o", "stat=", "-p", strconv.Itoa(pid)).Output()
	return err != nil || len(b) == 0 || b[0] == 'Z'
}
