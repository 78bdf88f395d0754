package itest

import (
	"bufio"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/hc"
	"github.com/giraffe-coord/giraffe/hc/master"
	"github.com/giraffe-coord/giraffe/internal/launcher"
)

// TestHCStartCommand drives the service through its commands: hc start
// (a master, an active and a standby worker, classic-3 each, and a
// daemon), create-domain and create-lock past the threshold (the standby
// is recruited), acquire running a command with its sequencer, exiting
// with its status, refusing a held lock with --try, validate, status
// --json and --audit, and hc stop, after which no server runs.
func TestHCStartCommand(t *testing.T) {
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	base, err := freeRange(2*100 + 10)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hc")
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"hc"}, args...)...)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return string(out), ee.ExitCode()
		}
		if err != nil {
			t.Fatalf("hc %v: %v", args, err)
		}
		return string(out), 0
	}
	out, code := run("start", "--dir", dir, "--workers", "1", "--standby", "1", "--threshold", "2",
		"--base-port", strconv.Itoa(base))
	t.Cleanup(func() { run("stop", "--dir", dir) })
	if code != 0 || !strings.Contains(out, "127.0.0.1:") {
		t.Fatalf("hc start: status %d, output %q", code, out)
	}
	d := []string{"--dir", dir}
	if _, code := run(append([]string{"create-domain"}, append(d, "/a", "/b")...)...); code != 0 {
		t.Fatal("create-domain failed")
	}
	if _, code := run(append([]string{"create-lock"}, append(d, "/a/x", "/a/y", "/b/z")...)...); code != 0 {
		t.Fatal("create-lock failed")
	}
	hcWait(t, 15*time.Second, "w2 recruited", func() bool {
		out, _ := run(append([]string{"status", "--json"}, d...)...)
		var st master.Status
		return json.Unmarshal([]byte(out), &st) == nil && len(st.Clusters) == 2 &&
			st.Clusters[1].Locks == 1 && st.Moving == 0 && st.Daemon == "local"
	})
	out, code = run(append(append([]string{"acquire"}, d...), "--try", "/b/z", "--", "sh", "-c", "echo $GIRAFFE_HC_SEQUENCER")...)
	seq, err := hc.ParseSequencer(strings.TrimSpace(out))
	if code != 0 || err != nil || seq.Cluster != "w2" {
		t.Fatalf("acquire: status %d, output %q (%v), want a hold on w2", code, out, err)
	}
	if _, code := run(append(append([]string{"acquire"}, d...), "/a/x", "--", "sh", "-c", "exit 5")...); code != 5 {
		t.Fatalf("acquire exited with %d, want the command's 5", code)
	}
	if _, code := run(append([]string{"validate"}, append(d, seq.String())...)...); code != 1 {
		t.Fatalf("validate of a released hold: status %d, want 1", code)
	}
	// A holder without a command holds until interrupted.
	holder := exec.Command(bin, append(append([]string{"hc", "acquire"}, d...), "/a/y")...)
	stdout, _ := holder.StdoutPipe()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Process.Kill(); holder.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	held := strings.TrimSpace(line)
	if _, code := run(append([]string{"validate"}, append(d, held)...)...); code != 0 {
		t.Fatalf("validate of a hold in force: status %d", code)
	}
	if _, code := run(append(append([]string{"acquire"}, d...), "--try", "/a/y", "--", "true")...); code != 2 {
		t.Fatalf("acquire --try of a held lock: status %d, want 2", code)
	}
	holder.Process.Signal(syscall.SIGTERM)
	holder.Wait()
	if _, code := run(append([]string{"validate"}, append(d, held)...)...); code != 1 {
		t.Fatalf("validate after the holder released: status %d, want 1", code)
	}
	if _, code := run(append([]string{"status", "--audit"}, d...)...); code != 0 {
		t.Fatal("status --audit found disagreements")
	}
	if _, code := run("stop", "--dir", dir); code != 0 {
		t.Fatal("hc stop failed")
	}
	for _, e := range []string{"master", "w1", "w2"} {
		c, err := launcher.Load(filepath.Join(dir, e))
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range c.Status() {
			if st.Alive {
				t.Fatalf("server %d of %s still runs after hc stop", st.ID, e)
			}
		}
	}
}
