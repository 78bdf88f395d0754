package recipes

import (
	"context"
	"github.com/giraffe-coord/giraffe/internal/zkpeer"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/server"
)

// Helpers of the lock tests. Their names start with "lk" because the
// package's other tests (barriers, queues, ...) are written alongside.

// lkStartGiraffe starts an in-process standalone Giraffe server on a free
// loopback port, with a short tick so that sessions can expire within a
// test, and returns its address.
func lkStartGiraffe(t testing.TB) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.MaxSessionTimeout = 30 * time.Second
	cfg.ForceSync = false
	cfg.MaxClientCnxns = 0
	s, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// lkStartZooKeeper runs a standalone Apache ZooKeeper 3.9 with the peer
// scripts (as the client's tests do) and skips when ZK_LIB is not set.
func lkStartZooKeeper(t testing.TB) string {
	t.Helper()
	return zkpeer.Start(t, zkpeer.Options{})
}

// lkConnect opens a session that is closed when the test ends.
func lkConnect(t testing.TB, addr string, opts ...client.Option) *client.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opts = append([]client.Option{client.WithSessionTimeout(5 * time.Second), client.WithoutShuffle()}, opts...)
	c, err := client.Connect(ctx, []string{addr}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// lkProxy forwards TCP connections to a server and can cut them and
// refuse new ones, which makes a client's session expire on the server.
type lkProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
	wg     sync.WaitGroup
	// muted drops what the server sends while set: requests still
	// arrive and take effect, their answers are lost.
	muted atomic.Bool
}

func lkNewProxy(t testing.TB, target string) *lkProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &lkProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *lkProxy) addr() string { return p.ln.Addr().String() }

func (p *lkProxy) accept() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(out, in, nil)
		go p.pipe(in, out, &p.muted)
	}
}

func (p *lkProxy) pipe(dst, src net.Conn, muted *atomic.Bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && (muted == nil || !muted.Load()) {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// cutOff severs every connection and refuses new ones: the client behind
// the proxy is, for the server, a crashed process.
func (p *lkProxy) cutOff() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore accepts connections again.
func (p *lkProxy) restore() {
	p.mu.Lock()
	p.refuse = false
	p.mu.Unlock()
}

func (p *lkProxy) close() {
	p.ln.Close()
	p.cutOff()
	p.wg.Wait()
}

// lkKazooPython returns the python of the project's virtualenv, where
// kazoo is installed, and skips the test when it is missing (make
// setup-python installs it).
func lkKazooPython(t testing.TB) string {
	t.Helper()
	py, err := filepath.Abs("../.venv/bin/python")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Skip("no ../.venv/bin/python: run `make setup-python` to install kazoo for the cross-client tests")
	}
	return py
}

// lkKazooRun runs the kazoo script src with args and returns its output,
// trimmed; the test fails if the script does.
func lkKazooRun(t testing.TB, py, src string, args ...string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "kazoo_script.py") // not kazoo.py: that would shadow the package
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, append([]string{script}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kazoo: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}
