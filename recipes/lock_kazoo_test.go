package recipes

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// lkKazooScript holds a kazoo lock of the given kind ("Lock", "ReadLock",
// "WriteLock") on a path: it prints "contending", then "locked" once it
// holds, waits for a line on stdin, releases and prints "released".
const lkKazooScript = `
import sys
from kazoo.client import KazooClient
hosts, path, kind = sys.argv[1], sys.argv[2], sys.argv[3]
zk = KazooClient(hosts=hosts)
zk.start(timeout=20)
lock = getattr(zk, kind)(path, "kazoo")
print("contending", flush=True)
lock.acquire(timeout=30)
print("locked", flush=True)
sys.stdin.readline()
lock.release()
print("released", flush=True)
zk.stop()
`

// lkKazoo is a running kazoo contender.
type lkKazoo struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func lkStartKazoo(t *testing.T, addr, path, kind string) *lkKazoo {
	t.Helper()
	py := lkKazooPython(t)
	script := filepath.Join(t.TempDir(), "kazoo_lock.py")
	if err := os.WriteFile(script, []byte(lkKazooScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, script, addr, path, kind)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := &lkKazoo{t: t, cmd: cmd, in: in, lines: make(chan string, 8)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k.lines <- strings.TrimSpace(sc.Text())
		}
		close(k.lines)
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return k
}

// expect waits for the script to print want.
func (k *lkKazoo) expect(want string, within time.Duration) {
	k.t.Helper()
	select {
	case got, ok := <-k.lines:
		if !ok || got != want {
			k.t.Fatalf("kazoo printed %q (open %v), want %q", got, ok, want)
		}
	case <-time.After(within):
		k.t.Fatalf("kazoo did not print %q within %v", want, within)
	}
}

// silent checks that the script prints nothing for d (it is blocked).
func (k *lkKazoo) silent(d time.Duration) {
	k.t.Helper()
	select {
	case got := <-k.lines:
		k.t.Fatalf("kazoo printed %q while it should be blocked", got)
	case <-time.After(d):
	}
}

func (k *lkKazoo) release() {
	k.t.Helper()
	if _, err := io.WriteString(k.in, "release\n"); err != nil {
		k.t.Fatal(err)
	}
	k.expect("released", 10*time.Second)
}

// lkLockAsync starts l.Lock and returns a channel with its result.
func lkLockAsync(ctx context.Context, l Locker) <-chan error {
	done := make(chan error, 1)
	go func() { done <- l.Lock(ctx) }()
	return done
}

// TestLockKazoo: a kazoo lock and the Go queue locks on one path exclude
// each other, in both directions, and kazoo's read locks share with ours.
func TestLockKazoo(t *testing.T) {
	addr := lkStartGiraffe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := lkConnect(t, addr)
	const blocked = 500 * time.Millisecond

	goLocks := map[string]func(path string) Locker{
		"queue":       func(p string) Locker { return NewQueueLock(conn, p) },
		"queue-async": func(p string) Locker { return NewAsyncQueueLock(conn, p) },
	}
	for name, newLock := range goLocks {
		t.Run("kazoo holds, "+name+" waits", func(t *testing.T) {
			path := "/kazoo/k-first-" + name
			k := lkStartKazoo(t, addr, path, "Lock")
			k.expect("contending", 30*time.Second)
			k.expect("locked", 30*time.Second)
			l := newLock(path)
			done := lkLockAsync(ctx, l)
			select {
			case err := <-done:
				t.Fatalf("Go lock returned (%v) while kazoo holds", err)
			case <-time.After(blocked):
			}
			k.release()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Go lock not granted after kazoo released")
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(name+" holds, kazoo waits", func(t *testing.T) {
			path := "/kazoo/go-first-" + name
			l := newLock(path)
			if err := l.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			k := lkStartKazoo(t, addr, path, "Lock")
			k.expect("contending", 30*time.Second)
			k.silent(blocked)
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			k.expect("locked", 10*time.Second)
			// kazoo holds now: we wait again.
			short, c := context.WithTimeout(ctx, 200*time.Millisecond)
			err := newLock(path).Lock(short)
			c()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Go lock while kazoo holds: %v", err)
			}
			k.release()
		})
	}
	t.Run("kazoo ReadLock shares with ours, excludes our WriteLock", func(t *testing.T) {
		path := "/kazoo/rw"
		k := lkStartKazoo(t, addr, path, "ReadLock")
		k.expect("contending", 30*time.Second)
		k.expect("locked", 30*time.Second)
		r := NewReadLock(conn, path)
		short, c := context.WithTimeout(ctx, 5*time.Second)
		defer c()
		if err := r.Lock(short); err != nil {
			t.Fatalf("our read lock beside kazoo's: %v", err)
		}
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		w := NewWriteLock(conn, path)
		done := lkLockAsync(ctx, w)
		select {
		case err := <-done:
			t.Fatalf("write lock returned (%v) while kazoo reads", err)
		case <-time.After(blocked):
		}
		k.release()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if err := w.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
