package itest

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestElectCommand runs `giraffe elect` candidates a, b and c and a
// listener against one server: the listener sees a elected first (it
// campaigned first), then b when a resigns (SIGTERM), then c when b's
// process is killed and its session expires.
func TestElectCommand(t *testing.T) {
	p := StartStandalone(t)
	bin, _ := Binary()
	start := func(args ...string) (*exec.Cmd, io.ReadCloser) {
		c := exec.Command(bin, append([]string{"elect", "--servers", p.Addr, "--session-timeout", "2s"}, args...)...)
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
		return c, out
	}
	listener, lout := start("--listen", "/election/x")
	_ = listener
	leaders := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(lout)
		for sc.Scan() {
			leaders <- strings.TrimSpace(sc.Text())
		}
	}()
	expect := func(want string) {
		t.Helper()
		deadline := time.After(20 * time.Second)
		for {
			select {
			case got := <-leaders:
				if got == want {
					return
				}
				if got != "(no leader)" {
					t.Fatalf("leader %q, want %q", got, want)
				}
			case <-deadline:
				t.Fatalf("no leader %q within 20s", want)
			}
		}
	}
	expect("(no leader)")
	a, _ := start("/election/x", "a")
	expect("a")
	b, _ := start("/election/x", "b")
	time.Sleep(300 * time.Millisecond) // b queues behind a
	start("/election/x", "c")
	time.Sleep(300 * time.Millisecond)
	a.Process.Signal(syscall.SIGTERM) // resigns
	expect("b")
	b.Process.Kill() // no resignation: its session has to expire
	expect("c")
}
