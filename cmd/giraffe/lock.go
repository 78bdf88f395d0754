package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/cli"
	"github.com/giraffe-coord/giraffe/recipes"
)

// newLockCmd returns `giraffe lock`, etcdctl lock's counterpart: take a
// distributed lock, run a command while holding it, release it.
func newLockCmd() *cobra.Command {
	var (
		servers, kind string
		timeout       time.Duration
		sessionTO     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "lock PATH [-- COMMAND ARGS...]",
		Short: "Acquire a distributed lock, run a command while holding it, release it",
		Long: `lock acquires the lock at PATH, then runs COMMAND and releases the lock when
it exits, exiting with the command's status. Without a command it prints the
lock's sequencer and holds the lock until interrupted (Ctrl-C).

Kinds (The Cost of Consensus): tas-sync (test-and-set, waits on a watch), tas-async
(test-and-set, timer-driven polling), queue-sync (ZooKeeper's lock recipe,
kazoo's layout: a kazoo Lock on the same path excludes it), queue-async
(queue, polling), reactive (switches between test-and-set and queueing with
contention). All contenders on one path must use the same kind, except that
the test-and-set kinds and reactive share one node, and the queue kinds
share kazoo's queue.

If the session is lost while the command runs, the lock is no longer held:
lock prints a warning and kills the command.`,
		Example: `  giraffe lock --servers 127.0.0.1:2181 /locks/backup -- ./backup.sh
  giraffe lock --servers 127.0.0.1:2181 --kind reactive /locks/x`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(recipes.LockKinds, kind) {
				return fmt.Errorf("--kind must be one of %s, got %q", strings.Join(recipes.LockKinds, ", "), kind)
			}
			path, command := args[0], args[1:]
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			conn, err := client.Connect(ctx, strings.Split(servers, ","), client.WithSessionTimeout(sessionTO))
			if err != nil {
				return err
			}
			defer conn.Close()
			lock, _ := recipes.NewLockOfKind(kind, conn, path)
			lctx := ctx
			if timeout > 0 {
				var cancel context.CancelFunc
				lctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			if err := lock.Lock(lctx); err != nil {
				return fmt.Errorf("acquiring %s: %w", path, err)
			}
			release := func() {
				uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := lock.Unlock(uctx); err != nil {
					fmt.Fprintln(os.Stderr, "giraffe lock: releasing:", err)
				}
			}
			if seq, err := lock.Sequencer(); err == nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "giraffe lock: acquired", seq.String())
			}
			if len(command) == 0 {
				<-ctx.Done()
				release()
				return nil
			}
			return runHolding(sessionLost(conn), "giraffe lock", command, release)
		},
	}
	f := cmd.Flags()
	f.StringVar(&servers, "servers", "127.0.0.1:2181", "comma-separated host:port list")
	f.StringVar(&kind, "kind", "queue-sync", "tas-sync, tas-async, queue-sync, queue-async or reactive")
	f.DurationVar(&timeout, "timeout", 0, "give up acquiring after this long (0: wait forever)")
	f.DurationVar(&sessionTO, "session-timeout", 10*time.Second, "session timeout")
	return cmd
}

// sessionLost returns a channel closed when conn's session expires: the
// locks it held are then gone.
func sessionLost(conn *client.Conn) <-chan struct{} {
	lost := make(chan struct{})
	go func() {
		for ev := range conn.SessionEvents() {
			if ev.State == client.StateExpired {
				close(lost)
				return
			}
		}
	}()
	return lost
}

// runHolding runs command while a lock is held and returns its exit
// status; it kills the command if lost is closed first (the lock is
// gone). who prefixes the messages.
func runHolding(lost <-chan struct{}, who string, command []string, release func()) error {
	c := exec.Command(command[0], command[1:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := c.Start(); err != nil {
		release()
		return err
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	for {
		select {
		case err := <-done:
			release()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				return &cli.ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("%s exited with status %d", command[0], ee.ExitCode())}
			}
			return err
		case s := <-sig:
			c.Process.Signal(s) // pass it on; the command decides
		case <-lost:
			fmt.Fprintf(os.Stderr, "%s: session expired, the lock is lost; killing %s\n", who, command[0])
			c.Process.Kill()
			lost = nil
		}
	}
}
