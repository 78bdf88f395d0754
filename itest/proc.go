// Package itest holds Giraffe's integration tests: real server processes,
// real ZooKeeper clients, real signals. The helpers in this file start and
// stop `giraffe server` processes.
package itest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/testport"
)

// Binary returns the giraffe binary to test: $GIRAFFE_BIN, or one built
// once into a temporary directory.
func Binary() (string, error) {
	buildOnce.Do(func() {
		if p := os.Getenv("GIRAFFE_BIN"); p != "" {
			builtBin = p
			return
		}
		dir, err := os.MkdirTemp("", "giraffe-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "giraffe")
		cmd := exec.Command("go", "build", "-o", builtBin, "github.com/giraffe-coord/giraffe/cmd/giraffe")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	return builtBin, buildErr
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago
// (testport.One).
func FreePort() (int, error) { return testport.One() }

// Proc is one running `giraffe server` process.
type Proc struct {
	Cmd     *exec.Cmd // the running process
	Addr    string    // client address, host:port
	DataDir string    // the server's --data-dir
	Log     *Output   // the process's stdout and stderr
	exited  chan struct{}
}

// Output collects a process's output as it comes; String and Wait may
// be called while it does.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// String returns the output so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Wait waits up to timeout for the output to contain s: the process
// writes through a pipe that this one reads in its own time.
func (o *Output) Wait(s string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(10 * time.Millisecond) {
		if strings.Contains(o.String(), s) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// StartServer starts a standalone server on port with dataDir and extra
// flags, and waits until it answers `srvr` (the one four-letter word the
// default whitelist allows).
func StartServer(dataDir string, port int, extra ...string) (*Proc, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	args := append([]string{"server", "--data-dir", dataDir, "--client-addr", "127.0.0.1",
		"--client-port", fmt.Sprint(port)}, extra...)
	p := &Proc{Cmd: exec.Command(bin, args...), Addr: fmt.Sprintf("127.0.0.1:%d", port),
		DataDir: dataDir, Log: &Output{}, exited: make(chan struct{})}
	p.Cmd.Stdout = p.Log
	p.Cmd.Stderr = p.Log
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.Cmd.Wait(); close(p.exited) }()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if out, err := FourLetter(p.Addr, "srvr"); err == nil && strings.Contains(out, "Mode: ") {
			return p, nil
		}
		select {
		case <-p.exited:
			return nil, fmt.Errorf("server exited during start-up:\n%s", p.Log.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	p.Kill()
	return nil, fmt.Errorf("server did not answer srvr within 20s:\n%s", p.Log.String())
}

// StartStandalone starts a standalone server on a free port with a new
// data directory and extra flags, and stops it when the test ends.
func StartStandalone(t testing.TB, extra ...string) *Proc {
	t.Helper()
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := StartServer(t.TempDir(), port, extra...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// Kill sends SIGKILL and waits for the process to be gone.
func (p *Proc) Kill() {
	p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop sends SIGTERM and waits (SIGKILL after 10 s).
func (p *Proc) Stop() {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.Kill()
	}
}

// FourLetter sends a four-letter word and returns the whole answer.
func FourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(word)); err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return b.String(), nil
}
