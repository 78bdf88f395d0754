package bench

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// startStandalone starts an embedded standalone server with no
// per-address connection limit (every connection through a testProxy
// comes from one address) and returns its client address.
func startStandalone(t *testing.T) string {
	t.Helper()
	cfg := embed.Standalone(t.TempDir())
	cfg.ForceSync = false
	cfg.TickTime = 100 * time.Millisecond
	cfg.MaxClientCnxns = 0
	s, err := embed.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Addr().String()
}

// handshakeSeen is one handshake a testProxy passed on.
type handshakeSeen struct {
	req  zkproto.ConnectRequest
	resp zkproto.ConnectResponse
}

// testProxy stands between clients and a server as a loaded server looks
// to them: it refuses the first Refuse connections (all of them when
// Refuse is negative) the way Giraffe refuses a handshake when it is not
// serving, reading the ConnectRequest and closing the connection
// unanswered, and forwards the others, which cut ends.
type testProxy struct {
	t      *testing.T
	ln     net.Listener
	target string

	mu       sync.Mutex
	refuse   int
	refused  int
	conns    []net.Conn
	seen     []handshakeSeen
	muted    bool // replies are no longer passed on
	accepted sync.WaitGroup
}

// newTestProxy listens on a loopback port and forwards to target.
func newTestProxy(t *testing.T, target string, refuse int) *testProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &testProxy{t: t, ln: ln, target: target, refuse: refuse}
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut(0)
		p.accepted.Wait()
	})
	return p
}

// addr is where clients connect.
func (p *testProxy) addr() string { return p.ln.Addr().String() }

func (p *testProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.accepted.Add(1)
		go func() {
			defer p.accepted.Done()
			p.serve(c)
		}()
	}
}

// serve refuses or forwards one connection.
func (p *testProxy) serve(c net.Conn) {
	cr := bufio.NewReader(c)
	frame, err := zkproto.ReadFrame(cr, nil, 1<<20)
	var req zkproto.ConnectRequest
	if err == nil {
		err = req.Decode(zkproto.NewDecoder(frame))
	}
	if err != nil { // not a client: mntr, say
		c.Close()
		return
	}
	p.mu.Lock()
	refuse := p.refuse < 0 || p.refused < p.refuse
	if refuse {
		p.refused++
	}
	p.mu.Unlock()
	if refuse {
		c.Close()
		return
	}
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, s) {
		return
	}
	sr := bufio.NewReader(s)
	var resp zkproto.ConnectResponse
	if _, err := s.Write(zkproto.AppendFrame(nil, &req)); err != nil {
		return
	}
	if frame, err = zkproto.ReadFrame(sr, nil, 1<<20); err != nil || resp.Decode(zkproto.NewDecoder(frame)) != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.seen = append(p.seen, handshakeSeen{req, resp})
	p.mu.Unlock()
	if _, err := c.Write(zkproto.AppendFrame(nil, &resp)); err != nil {
		return
	}
	go func() {
		defer s.Close()
		cr.WriteTo(s)
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := sr.Read(buf)
		if err != nil {
			c.Close()
			return
		}
		p.mu.Lock()
		muted := p.muted
		p.mu.Unlock()
		if !muted {
			if _, err := c.Write(buf[:n]); err != nil {
				s.Close()
				return
			}
		}
	}
}

// track notes a forwarded connection's two sides for cut; false (both
// closed) if the proxy is being cut.
func (p *testProxy) track(c, s net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.muted {
		c.Close()
		s.Close()
		return false
	}
	p.conns = append(p.conns, c, s)
	return true
}

// cut stops passing replies on for mute (so that the requests sent
// meanwhile are in flight when the connections end), then ends every
// connection forwarded so far; later connections are forwarded again.
func (p *testProxy) cut(mute time.Duration) {
	p.mu.Lock()
	p.muted = true
	p.mu.Unlock()
	time.Sleep(mute)
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.muted = false
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// refuseNext makes the proxy refuse its next n connections.
func (p *testProxy) refuseNext(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse, p.refused = n, 0
}

// handshakes returns the handshakes passed on so far, and the count of
// connections refused.
func (p *testProxy) handshakes() ([]handshakeSeen, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]handshakeSeen(nil), p.seen...), p.refused
}

// idleConfig is a small idle phase against servers.
func idleConfig(servers []string, sessions int) SessionsConfig {
	return SessionsConfig{Servers: servers, Phases: []string{PhaseIdle}, Timeout: 2 * time.Second, Root: "/retry-test",
		Sessions: sessions, Settle: 10 * time.Millisecond, Hold: 200 * time.Millisecond, Concurrency: 2}
}

// TestOpenRetriesRefusedHandshakes: a handshake closed unanswered is tried
// again, more times than the five a session once had, and counted; a
// session refused by its own server opens on the next one; a session that
// no server takes within --open-timeout fails the phase, saying so.
func TestOpenRetriesRefusedHandshakes(t *testing.T) {
	server := startStandalone(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("same server", func(t *testing.T) {
		p := newTestProxy(t, server, 12)
		res, err := RunSessions(ctx, idleConfig([]string{p.addr()}, 8))
		if err != nil {
			t.Fatal(err)
		}
		seen, refused := p.handshakes()
		if idle := res.Idle; idle.Sessions != 8 || idle.Alive != 8 || idle.Lost != 0 || idle.Retries != 12 ||
			refused != 12 || len(seen) != 8 {
			t.Fatalf("%d sessions, %d alive, %d lost, %d retries; the proxy refused %d and passed %d on",
				idle.Sessions, idle.Alive, idle.Lost, idle.Retries, refused, len(seen))
		}
	})

	t.Run("next server", func(t *testing.T) {
		refusing := newTestProxy(t, server, -1)
		passing := newTestProxy(t, server, 0)
		res, err := RunSessions(ctx, idleConfig([]string{refusing.addr(), passing.addr()}, 6))
		if err != nil {
			t.Fatal(err)
		}
		// Sessions 0, 2 and 4 start on the refusing server.
		seen, _ := passing.handshakes()
		if _, refused := refusing.handshakes(); res.Idle.Alive != 6 || res.Idle.Retries != 3 || refused != 3 || len(seen) != 6 {
			t.Fatalf("%d alive, %d retries; %d refused, %d passed on", res.Idle.Alive, res.Idle.Retries, refused, len(seen))
		}
	})

	t.Run("budget", func(t *testing.T) {
		refusing := newTestProxy(t, server, -1)
		cfg := idleConfig([]string{refusing.addr()}, 2)
		cfg.OpenTimeout = 500 * time.Millisecond
		start := time.Now()
		_, err := RunSessions(ctx, cfg)
		if err == nil || !strings.Contains(err.Error(), "could not be opened") || !strings.Contains(err.Error(), "within 500ms") {
			t.Fatalf("error %v", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("gave up after %v", took)
		}
	})
}

// TestRedialResumesOrExpires: a reconnect presents the session's id,
// password and last zxid and gets the same session back; once the session
// is closed, the server says it expired.
func TestRedialResumesOrExpires(t *testing.T) {
	server := startStandalone(t)
	s, err := dial(server, 10*time.Second, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := createNodes(s, []string{"/redial"}, nil); err != nil {
		t.Fatal(err)
	}
	s.fail()
	if s.lastZxid.Load() <= 0 {
		t.Fatalf("last zxid %d after a create", s.lastZxid.Load())
	}
	again, err := redial(server, s, 10*time.Second, 4, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if again.id != s.id || again.lastZxid.Load() != s.lastZxid.Load() {
		t.Fatalf("resumed 0x%x (zxid %d), was 0x%x (zxid %d)", again.id, again.lastZxid.Load(), s.id, s.lastZxid.Load())
	}
	if code, _, err := call(again, zkproto.OpCloseSession, nil, nil); err != nil || code != zkproto.OK {
		t.Fatalf("closeSession: %v, %v", code, err)
	}
	again.fail()
	if _, err := redial(server, again, 10*time.Second, 4, time.Now().Add(10*time.Second)); !errors.Is(err, errSessionExpired) {
		t.Fatalf("resuming a closed session: %v", err)
	}
}

// TestWriterReconnects: an open-loop writer whose connections end (replies
// held back for a moment first, so that requests are in flight) resumes
// its sessions through a server that refuses them eight times first; the
// run goes on, counts the reconnects and the requests lost as errors, and
// times the requests due meanwhile from when they were due.
func TestWriterReconnects(t *testing.T) {
	server := startStandalone(t)
	p := newTestProxy(t, server, 0)
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		time.Sleep(time.Second)
		p.refuseNext(8)
		p.cut(200 * time.Millisecond)
	}()
	res, err := Run(context.Background(), Config{Servers: []string{p.addr()}, Workload: Write, Sessions: 2, ValueSize: 16,
		Root: "/writer-test", Rate: 200, Duration: 3 * time.Second})
	<-cut
	if err != nil {
		t.Fatal(err)
	}
	seen, refused := p.handshakes()
	t.Logf("%d ops, %d errors, %d reconnects, latency %+v; %d handshakes, %d refused",
		res.Ops, res.Errors, res.Reconnects, res.Latency, len(seen), refused)
	if res.Reconnects != 2 || res.Errors == 0 || res.Ops == 0 || refused != 8 || len(seen) != 4 {
		t.Fatalf("%d reconnects, %d errors, %d ops; the proxy passed %d handshakes on and refused %d",
			res.Reconnects, res.Errors, res.Ops, len(seen), refused)
	}
	// The first two handshakes opened the sessions, the last two resumed
	// them, each with the zxid it had seen.
	for _, h := range seen[2:] {
		if h.req.SessionID == 0 || h.resp.SessionID != h.req.SessionID || h.resp.TimeOut <= 0 || h.req.LastZxidSeen <= 0 ||
			(h.req.SessionID != seen[0].resp.SessionID && h.req.SessionID != seen[1].resp.SessionID) {
			t.Fatalf("reconnect %+v answered %+v; the sessions were 0x%x and 0x%x",
				h.req, h.resp, seen[0].resp.SessionID, seen[1].resp.SessionID)
		}
	}
	// One session was refused at least four times, which takes at least
	// 25+50+100+200 ms of pauses: the requests due in that time (100 a
	// second) leave after it, their latency counted from when they were
	// due.
	if res.Latency.Max < 200 {
		t.Fatalf("the slowest request took %.1f ms", res.Latency.Max)
	}
}

// TestHeldSessionsLost: held sessions whose connections end are counted
// as lost and the phases go on: the expire phase expires the rest, the
// watch phase's rounds expect no notification of the lost watchers and
// do not wait for them.
func TestHeldSessionsLost(t *testing.T) {
	server := startStandalone(t)
	p := newTestProxy(t, server, 0)
	const n = 40
	cfg := SessionsConfig{Servers: []string{server, p.addr()}, Phases: []string{PhaseExpire, PhaseWatch},
		Timeout: time.Second, Root: "/lost-test", ExpireSessions: n, Ephemerals: 2, Rate: 100, WriterSessions: 2,
		WriterLead: 200 * time.Millisecond, Watchers: n, Rounds: 3, RoundTimeout: 20 * time.Second, Concurrency: 8,
		// Sessions 1, 3, 5... go through the proxy, the coordinator's
		// straight to the server: the proxy's connections end once the
		// ephemerals are made and once the watches are set.
		Progress: func(line string) {
			if strings.HasPrefix(line, "expire: ") && strings.Contains(line, "hold") ||
				strings.HasPrefix(line, "watch: ") && strings.Contains(line, "watchers of") {
				p.cut(0)
			}
		}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	res, err := RunSessions(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	exp, watch := res.Expire, res.Watch
	t.Logf("expire: %d lost (%s), %d created, %d at the drop, gone after %.2fs; watch: %d lost, %d of %d notified in %v",
		exp.Lost, exp.LostError, exp.Created, exp.AtDrop, exp.ExpirySeconds, watch.Lost, watch.Notified, watch.Expected,
		time.Since(start))
	if exp.Lost != n/2 || exp.Created != 2*n || exp.AtDrop > exp.Created || exp.ExpirySeconds <= 0 || exp.Writer.Ops == 0 {
		t.Fatalf("expire: %+v", exp)
	}
	if watch.Lost != n/2 || watch.Expected != n/2*3 || watch.Notified != watch.Expected || watch.Missed != 0 || watch.Unexpected != 0 {
		t.Fatalf("watch: %+v", watch)
	}
	// A round waiting for a lost watcher would wait out RoundTimeout.
	if took := time.Since(start); took > cfg.RoundTimeout {
		t.Fatalf("the phases took %v", took)
	}
}
