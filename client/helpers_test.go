package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// testServer is an in-process standalone Giraffe server that a test can
// stop and start again on the same data directory and port.
type testServer struct {
	t    *testing.T
	cfg  server.Config
	srv  *server.Server
	addr string
}

// startServer starts a server on a free loopback port with a short tick,
// so that sessions can time out within a test.
func startServer(t *testing.T) *testServer {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.MaxSessionTimeout = 30 * time.Second
	cfg.ContainerCheckInterval = 100 * time.Millisecond
	cfg.ExtendedTypes = true
	cfg.ForceSync = false
	cfg.MaxClientCnxns = 0
	ts := &testServer{t: t, cfg: cfg}
	ts.start()
	t.Cleanup(ts.stop)
	return ts
}

func (ts *testServer) start() {
	ts.t.Helper()
	s, err := server.New(ts.cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		ts.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		ts.t.Fatal(err)
	}
	ts.srv = s
	ts.addr = s.Addr().String()
	ts.cfg.ClientPort = s.Addr().(*net.TCPAddr).Port // restart on the same port
}

func (ts *testServer) stop() {
	if ts.srv != nil {
		ts.srv.Close()
		ts.srv = nil
	}
}

// restart stops the server and starts it again on the same data directory
// and port: the session table and the tree are recovered, the watches
// (which live in memory only) are gone.
func (ts *testServer) restart() {
	ts.t.Helper()
	ts.stop()
	ts.start()
}

// ctxT returns a context that ends with a generous test deadline.
func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// connect opens a session and closes it when the test ends.
func connect(t *testing.T, servers []string, opts ...Option) *Conn {
	t.Helper()
	opts = append([]Option{WithSessionTimeout(5 * time.Second), WithoutShuffle()}, opts...)
	c, err := Connect(ctxT(t), servers, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func wantCode(t *testing.T, what string, err error, want zkproto.Code) {
	t.Helper()
	if want == zkproto.OK {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", what, err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// waitEvent receives one event or fails the test.
func waitEvent(t *testing.T, ch <-chan Event, what string) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("%s: channel closed without an event", what)
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no event", what)
	}
	return Event{}
}

// noEvent checks that nothing arrives on ch for a short while.
func noEvent(t *testing.T, ch <-chan Event, what string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if ok {
			t.Fatalf("%s: unexpected event %+v", what, ev)
		}
		t.Fatalf("%s: channel closed", what)
	case <-time.After(150 * time.Millisecond):
	}
}

// waitState reads session events until state s arrives.
func waitState(t *testing.T, c *Conn, s State) SessionEvent {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev, ok := <-c.SessionEvents():
			if !ok {
				t.Fatalf("session events closed while waiting for %v (state %v)", s, c.State())
			}
			if ev.State == s {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %v event (state %v)", s, c.State())
		}
	}
}

// proxy forwards TCP connections to a target and lets a test cut them
// (as a server closing the connection does), refuse new ones (a server
// that is down) or hold back the server's replies.
type proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	conns  []net.Conn
	refuse bool
	paused chan struct{} // non-nil while replies are held back
	wg     sync.WaitGroup
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
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
		go p.pipe(out, in, false)
		go p.pipe(in, out, true)
	}
}

// pipe copies src to dst; replies (fromServer) wait while paused.
func (p *proxy) pipe(dst, src net.Conn, fromServer bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if fromServer {
				p.mu.Lock()
				gate := p.paused
				p.mu.Unlock()
				if gate != nil {
					<-gate
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sever closes every proxied connection.
func (p *proxy) sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) setRefuse(v bool) {
	p.mu.Lock()
	p.refuse = v
	p.mu.Unlock()
}

// pause holds back the server's replies until the returned function is
// called.
func (p *proxy) pause() (resume func()) {
	gate := make(chan struct{})
	p.mu.Lock()
	p.paused = gate
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		p.paused = nil
		p.mu.Unlock()
		close(gate)
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.sever()
	p.wg.Wait()
}

// clientGoroutines lists the goroutines running code of this package
// (other than tests), to check that Close leaves none behind.
func clientGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "giraffe/client.(*Conn)") || strings.Contains(g, "giraffe/client.(*pump") ||
			strings.Contains(g, "giraffe/client.newPump") {
			out = append(out, g)
		}
	}
	return out
}

// waitNoClientGoroutines fails unless every client goroutine exits soon.
func waitNoClientGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		gs := clientGoroutines()
		if len(gs) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d client goroutines left:\n%s", len(gs), strings.Join(gs, "\n\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustCreate(t *testing.T, c *Conn, path string, data string, mode CreateMode) string {
	t.Helper()
	p, _, err := c.Create(ctxT(t), path, []byte(data), mode, zkproto.OpenACLUnsafe)
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

// newRefusingAddr returns a loopback address where nothing listens.
func newRefusingAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
