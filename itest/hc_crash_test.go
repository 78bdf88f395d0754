package itest

import (
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/hc/master"
)

// copies reads lock's copy on every worker (absent ones are left out).
func (s *hcService) copies(t *testing.T, lock string) map[string]layout.WorkerLock {
	t.Helper()
	out := map[string]layout.WorkerLock{}
	for id, addr := range s.workers {
		conn := hcConnect(t, addr)
		data, _, err := conn.Get(hcCtx(t, 5*time.Second), layout.WorkerLockPath(lock))
		conn.Close()
		if err != nil {
			continue
		}
		var rec layout.WorkerLock
		if err := layout.Unmarshal(data, &rec); err != nil {
			t.Fatal(err)
		}
		out[id] = rec
	}
	return out
}

// enabledOn returns the workers where lock's copy is enabled.
func (s *hcService) enabledOn(t *testing.T, lock string) []string {
	var on []string
	for id, rec := range s.copies(t, lock) {
		if rec.State == layout.Enabled {
			on = append(on, id)
		}
	}
	return on
}

// hcStopPoints are the points of the move protocol a daemon is stopped
// at: after every worker action and after every recorded phase.
var hcStopPoints = []master.Point{
	{Phase: layout.Prepared}, {Phase: layout.Prepared, Recorded: true},
	{Phase: layout.Disabled}, {Phase: layout.Disabled, Recorded: true},
	{Phase: layout.Recalcitrant, Recorded: true},
	{Phase: layout.Claimed}, {Phase: layout.Claimed, Recorded: true},
	{Phase: layout.Committed, Recorded: true},
	{Phase: ""}, // the source copy is gone, the record not yet deleted
}

func pointName(p master.Point) string {
	name := string(p.Phase)
	if name == "" {
		name = "done"
	}
	if !p.Recorded {
		name += ":acted"
	}
	return name
}

// TestHCDaemonStoppedAnywhere stops the daemon at every point of the move
// protocol (in this process: its step hook stops it as a crash there
// would) and starts another: at the stop the lock is enabled on at most
// one worker, and the second daemon finishes the move, after which the
// master and the workers agree and the next hold, on the destination, has
// a larger generation.
func TestHCDaemonStoppedAnywhere(t *testing.T) {
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Active})
	c := s.client(t, 2*time.Second, 0)
	ctx := hcCtx(t, 120*time.Second)
	lock := hcLocks(t, c, "/k", 0, 1)[0]
	for i, pt := range hcStopPoints {
		t.Run(pointName(pt), func(t *testing.T) {
			from, to := "w1", "w2"
			if i%2 == 1 {
				from, to = to, from
			}
			h, err := c.TryAcquire(ctx, lock)
			if err != nil {
				t.Fatal(err)
			}
			before := h.Sequencer()
			if before.Cluster != from {
				t.Fatalf("held on %s, want %s", before.Cluster, from)
			}
			if pt.Phase != layout.Recalcitrant {
				h.Release(ctx)
			}
			hook := func(p master.Point) error {
				if p.Phase == pt.Phase && p.Recorded == pt.Recorded {
					return errors.New("stopped here")
				}
				return nil
			}
			_, done := s.daemon(t, "stopped", 0, hook)
			if _, err := master.MoveLocks(ctx, s.admin, []string{lock}, to); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if !errors.Is(err, master.ErrStopped) {
					t.Fatalf("daemon ended with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the daemon never reached the point")
			}
			if on := s.enabledOn(t, lock); len(on) > 1 {
				t.Fatalf("enabled on %v at the stop", on)
			}
			if pt.Phase == layout.Recalcitrant {
				h.Release(ctx)
			}
			s.daemon(t, "resumer", 0, nil)
			s.settle(t, 10*time.Second)
			h, err = c.TryAcquire(ctx, lock)
			if err != nil {
				t.Fatal(err)
			}
			after := h.Sequencer()
			h.Release(ctx)
			if after.Cluster != to || after.Generation <= before.Generation {
				t.Fatalf("after the resumed move held as %v, before as %v", after, before)
			}
		})
	}
}

// hcDaemonProc starts `giraffe hc daemon` as a process with extra flags.
func (s *hcService) daemonProc(t *testing.T, name string, extra ...string) *exec.Cmd {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"hc", "daemon", "--master", s.master, "--name", name, "--threshold", "0",
		"--session-timeout", "1s"}, extra...)
	cmd := exec.Command(bin, args...)
	var log strings.Builder
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.daemons[name] = cmd
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("--- daemon %s\n%s", name, tail(log.String(), 20))
		}
	})
	return cmd
}

// waitLeader waits until the daemon named name is elected.
func (s *hcService) waitLeader(t *testing.T, name string) {
	t.Helper()
	hcWait(t, 15*time.Second, name+" elected", func() bool {
		got, err := master.Leader(hcCtx(t, 5*time.Second), s.admin)
		return err == nil && got == name
	})
}

// TestHCDaemonProcessKilled: daemon processes die mid-move, one by
// exiting at a chosen point without closing its sessions, one by SIGKILL
// while it moves a batch of locks; each time another daemon process takes
// over once the dead one's session has expired and finishes the moves.
func TestHCDaemonProcessKilled(t *testing.T) {
	s := startHC(t, map[string]layout.ClusterState{"w1": layout.Active, "w2": layout.Active})
	c := s.client(t, 2*time.Second, 0)
	ctx := hcCtx(t, 120*time.Second)
	locks := hcLocks(t, c, "/p", 0, 20)

	crashy := s.daemonProc(t, "crashy", "--exit-at", "claimed:acted")
	s.waitLeader(t, "crashy")
	standbyDaemon := s.daemonProc(t, "standby")
	exited := make(chan error, 1)
	go func() { exited <- crashy.Wait() }()
	if _, err := master.MoveLocks(ctx, s.admin, locks[:1], "w2"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err == nil || crashy.ProcessState.ExitCode() != 3 {
			t.Fatalf("daemon exited with %v, want status 3", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the daemon did not exit at the point")
	}
	s.settle(t, 15*time.Second)
	s.waitLeader(t, "standby")

	// A batch in flight, one of its locks held so that the batch cannot
	// finish, and a SIGKILL once the others have moved.
	h, err := c.TryAcquire(ctx, locks[1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := master.MoveLocks(ctx, s.admin, locks[1:], "w2"); err != nil {
		t.Fatal(err)
	}
	hcWait(t, 15*time.Second, "the free locks moved", func() bool {
		st := s.status(t)
		return st.Moving == 1 && st.Recalcitrant == 1
	})
	standbyDaemon.Process.Signal(syscall.SIGKILL)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s.daemonProc(t, "third")
	s.settle(t, 15*time.Second)
	for _, l := range locks {
		if w, err := c.Locate(ctx, l); err != nil || w != "w2" {
			t.Fatalf("%s on %q (%v), want w2", l, w, err)
		}
	}
}
