package server_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// target is what a test talks to: an in-process standalone server, or,
// when GIRAFFE_ENSEMBLE names a shape (classic-3, forest-9-3-3), an
// ensemble of real server processes. Each Addr of an ensemble is the next
// server, so a test's clients spread over all of them.
type target interface{ Addr() net.Addr }

// startTarget runs an in-process server on a free loopback port, or the
// ensemble GIRAFFE_ENSEMBLE names, with the same settings.
func startTarget(t *testing.T, mutate ...func(*server.Config)) target {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.MaxSessionTimeout = 30 * time.Second
	cfg.FourLetterWords = []string{"*"}
	cfg.ContainerCheckInterval = 100 * time.Millisecond
	cfg.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	if shape := os.Getenv("GIRAFFE_ENSEMBLE"); shape != "" {
		return startEnsemble(t, shape, cfg)
	}
	return startStandalone(t, cfg)
}

// startServer runs an in-process standalone server (the wire tests look
// inside it).
func startServer(t *testing.T, mutate ...func(*server.Config)) *server.Server {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.TickTime = 100 * time.Millisecond
	cfg.MaxSessionTimeout = 30 * time.Second
	cfg.FourLetterWords = []string{"*"}
	cfg.ContainerCheckInterval = 100 * time.Millisecond
	cfg.ExtendedTypes = true
	for _, m := range mutate {
		m(&cfg)
	}
	return startStandalone(t, cfg)
}

func startStandalone(t *testing.T, cfg server.Config) *server.Server {
	t.Helper()
	s, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func startEnsemble(t *testing.T, shape string, cfg server.Config) target {
	sh, err := members.ParseShape(shape)
	if err != nil {
		t.Fatalf("GIRAFFE_ENSEMBLE: %v", err)
	}
	extra := []string{
		fmt.Sprintf("tickTime=%d", cfg.TickTime.Milliseconds()),
		fmt.Sprintf("maxSessionTimeout=%d", cfg.MaxSessionTimeout.Milliseconds()),
		"4lw.commands.whitelist=" + strings.Join(cfg.FourLetterWords, ","),
		fmt.Sprintf("znode.container.checkIntervalMs=%d", cfg.ContainerCheckInterval.Milliseconds()),
		fmt.Sprintf("extendedTypesEnabled=%v", cfg.ExtendedTypes),
		fmt.Sprintf("maxClientCnxns=%d", cfg.MaxClientCnxns),
	}
	if cfg.SuperDigest != "" {
		extra = append(extra, "superDigest="+cfg.SuperDigest)
	}
	for _, ns := range cfg.Namespaces.Namespaces() {
		extra = append(extra, fmt.Sprintf("giraffe.namespace.%s=%s", ns.Name, ns.Level))
	}
	if cfg.WeakMode != server.WeakShortCircuit {
		extra = append(extra, "giraffe.weakMode="+cfg.WeakMode.String())
	}
	c := itest.StartEnsemble(t, sh, extra...)
	e := &ensembleTarget{}
	for _, sv := range c.Servers {
		e.addrs = append(e.addrs, sv.ClientAddr)
	}
	return e
}

type ensembleTarget struct {
	addrs []string
	next  atomic.Int64
}

func (e *ensembleTarget) Addr() net.Addr {
	return tcpAddr(e.addrs[int(e.next.Add(1)-1)%len(e.addrs)])
}

// tcpAddr is a host:port as a net.Addr.
type tcpAddr string

func (a tcpAddr) Network() string { return "tcp" }
func (a tcpAddr) String() string  { return string(a) }

// connect opens a go-zookeeper client and waits for its session.
func connect(t *testing.T, addr string, opts ...func(*zk.Conn)) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	c, ev, err := zk.Connect([]string{addr}, 5*time.Second, zk.WithLogInfo(false), func(c *zk.Conn) {
		for _, o := range opts {
			o(c)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	deadline := time.After(10 * time.Second)
	for c.State() != zk.StateHasSession {
		select {
		case <-ev:
		case <-deadline:
			t.Fatalf("no session with %s", addr)
		}
	}
	return c, ev
}

// must returns v, failing the test (by panicking, which the test runner
// reports with the stack) when err is set.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func wantErr(t *testing.T, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got error %v, want %v", err, want)
	}
}

func TestCreateGetSetDelete(t *testing.T) {
	s := startTarget(t)
	c, _ := connect(t, s.Addr().String())
	acl := zk.WorldACL(zk.PermAll)
	if p := must(c.Create("/a", []byte("x"), 0, acl)); p != "/a" {
		t.Fatalf("created %q", p)
	}
	_, err := c.Create("/a", nil, 0, acl)
	wantErr(t, err, zk.ErrNodeExists)
	_, err = c.Create("/missing/b", nil, 0, acl)
	wantErr(t, err, zk.ErrNoNode)
	data, st, err := c.Get("/a")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "x" || st.Version != 0 || st.DataLength != 1 || st.Czxid != st.Mzxid {
		t.Fatalf("get: %q %+v", data, st)
	}
	st2 := must(c.Set("/a", []byte("yy"), 0))
	if st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.DataLength != 2 {
		t.Fatalf("set: %+v", st2)
	}
	_, err = c.Set("/a", nil, 0)
	wantErr(t, err, zk.ErrBadVersion)
	must(c.Create("/a/b", nil, 0, acl))
	wantErr(t, c.Delete("/a", -1), zk.ErrNotEmpty)
	wantErr(t, c.Delete("/a/b", 3), zk.ErrBadVersion)
	if err := c.Delete("/a/b", 0); err != nil {
		t.Fatal(err)
	}
	ok, st3, err := c.Exists("/a")
	if err != nil || !ok || st3.NumChildren != 0 || st3.Cversion != 2 || st3.Pzxid <= st2.Mzxid {
		t.Fatalf("exists: %v %+v", ok, st3)
	}
	wantErr(t, c.Delete("/nope", -1), zk.ErrNoNode)
}

func TestSequentialEphemeralContainerTTL(t *testing.T) {
	s := startTarget(t)
	c, _ := connect(t, s.Addr().String())
	acl := zk.WorldACL(zk.PermAll)
	must(c.Create("/q", nil, 0, acl))
	p1 := must(c.Create("/q/n-", nil, zk.FlagSequence, acl))
	p2 := must(c.Create("/q/n-", nil, zk.FlagSequence|zk.FlagEphemeral, acl))
	if p1 != "/q/n-0000000000" || p2 != "/q/n-0000000001" {
		t.Fatalf("sequential names %q %q", p1, p2)
	}
	_, err := c.Create(p2+"/child", nil, 0, acl)
	wantErr(t, err, zk.ErrNoChildrenForEphemerals)
	_, st, err := c.Exists(p2)
	if err != nil || st.EphemeralOwner != c.SessionID() {
		t.Fatalf("ephemeral owner %x, session %x (%v)", st.EphemeralOwner, c.SessionID(), err)
	}
	must(c.CreateContainer("/cont", nil, zk.FlagContainer, acl))
	must(c.Create("/cont/x", nil, 0, acl))
	if err := c.Delete("/cont/x", -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "container reaped", func() bool { ok, _, _ := c.Exists("/cont"); return !ok })
	must(c.CreateTTL("/ttl", nil, zk.FlagTTL, acl, 200*time.Millisecond))
	waitFor(t, "TTL node reaped", func() bool { ok, _, _ := c.Exists("/ttl"); return !ok })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWatchesFireOnceAndInOrder(t *testing.T) {
	s := startTarget(t)
	a, _ := connect(t, s.Addr().String())
	b, _ := connect(t, s.Addr().String())
	acl := zk.WorldACL(zk.PermAll)
	must(a.Create("/w", []byte("0"), 0, acl))
	_, _, dataW, err := a.GetW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, childW, err := a.ChildrenW("/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, existW, err := a.ExistsW("/w/later")
	if err != nil {
		t.Fatal(err)
	}
	must(b.Set("/w", []byte("1"), -1))
	must(b.Create("/w/later", nil, 0, acl))
	for _, c := range []struct {
		ch   <-chan zk.Event
		want zk.EventType
		path string
	}{{dataW, zk.EventNodeDataChanged, "/w"}, {childW, zk.EventNodeChildrenChanged, "/w"}, {existW, zk.EventNodeCreated, "/w/later"}} {
		select {
		case ev := <-c.ch:
			if ev.Type != c.want || ev.Path != c.path {
				t.Fatalf("event %+v, want %v on %s", ev, c.want, c.path)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %v event", c.want)
		}
	}
	// The ordering guarantee: a client that reads the new value has seen
	// the event first.
	for i := 0; i < 50; i++ {
		_, _, w, err := a.GetW("/w")
		if err != nil {
			t.Fatal(err)
		}
		val := fmt.Sprint(i + 100)
		must(b.Set("/w", []byte(val), -1))
		for {
			data, _, err := a.Get("/w")
			if err != nil {
				t.Fatal(err)
			}
			if string(data) == val {
				select {
				case <-w:
				default:
					t.Fatalf("read the new value before the watch event (iteration %d)", i)
				}
				break
			}
		}
	}
}

func TestMultiAtomicity(t *testing.T) {
	s := startTarget(t)
	c, _ := connect(t, s.Addr().String())
	acl := zk.WorldACL(zk.PermAll)
	res, err := c.Multi(&zk.CreateRequest{Path: "/m", Acl: acl}, &zk.CreateRequest{Path: "/m/1", Acl: acl},
		&zk.SetDataRequest{Path: "/m", Data: []byte("v"), Version: 0})
	if err != nil || len(res) != 3 || res[1].String != "/m/1" || res[2].Stat == nil || res[2].Stat.Version != 1 {
		t.Fatalf("multi: %+v %v", res, err)
	}
	res, err = c.Multi(&zk.CreateRequest{Path: "/m/2", Acl: acl}, &zk.CheckVersionRequest{Path: "/m", Version: 7},
		&zk.DeleteRequest{Path: "/m/1", Version: -1})
	if err == nil {
		t.Fatal("failed multi returned no error")
	}
	if len(res) != 3 {
		t.Fatalf("results %+v", res)
	}
	wantErr(t, res[1].Error, zk.ErrBadVersion)
	if ok, _, _ := c.Exists("/m/2"); ok {
		t.Fatal("a failed multi created a node")
	}
	if ok, _, _ := c.Exists("/m/1"); !ok {
		t.Fatal("a failed multi deleted a node")
	}
}

func TestACLsAndAuth(t *testing.T) {
	s := startTarget(t, func(c *server.Config) { c.SuperDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU=" })
	owner, _ := connect(t, s.Addr().String())
	if err := owner.AddAuth("digest", []byte("alice:pw")); err != nil {
		t.Fatal(err)
	}
	must(owner.Create("/secret", []byte("s"), 0, zk.DigestACL(zk.PermAll, "alice", "pw")))
	other, _ := connect(t, s.Addr().String())
	_, _, err := other.Get("/secret")
	wantErr(t, err, zk.ErrNoAuth)
	_, err = other.Set("/secret", nil, -1)
	wantErr(t, err, zk.ErrNoAuth)
	_, err = owner.Create("/bad", nil, 0, []zk.ACL{{Perms: zk.PermAll, Scheme: "nope", ID: "x"}})
	wantErr(t, err, zk.ErrInvalidACL)
	acls, st, err := owner.GetACL("/secret")
	if err != nil || len(acls) != 1 || acls[0].Scheme != "digest" || st.Aversion != 0 {
		t.Fatalf("getACL: %+v %+v %v", acls, st, err)
	}
	st, err = owner.SetACL("/secret", zk.WorldACL(zk.PermRead), 0)
	if err != nil || st.Aversion != 1 {
		t.Fatalf("setACL: %+v %v", st, err)
	}
	other.Sync("/secret") // another server of an ensemble may lag
	if _, _, err := other.Get("/secret"); err != nil {
		t.Fatal(err)
	}
	must(owner.Create("/ip", nil, 0, []zk.ACL{{Perms: zk.PermRead, Scheme: "ip", ID: "10.0.0.0/8"}}))
	_, _, err = owner.Get("/ip")
	wantErr(t, err, zk.ErrNoAuth)
	su, _ := connect(t, s.Addr().String())
	if err := su.AddAuth("digest", []byte("super:test")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := su.Get("/ip"); err != nil {
		t.Fatalf("super user: %v", err)
	}
}

func TestSessionExpiryAndReconnect(t *testing.T) {
	s := startTarget(t)
	watcher, _ := connect(t, s.Addr().String())
	short, _ := connect(t, s.Addr().String())
	must(short.Create("/e", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)))
	// In an ensemble the watcher is on another server, which may not have
	// applied the create yet (its exists would then set a creation watch).
	if _, err := watcher.Sync("/e"); err != nil {
		t.Fatal(err)
	}
	_, _, ev, err := watcher.ExistsW("/e")
	if err != nil {
		t.Fatal(err)
	}
	// Closing the session deletes its ephemerals through the log.
	short.Close()
	select {
	case e := <-ev:
		if e.Type != zk.EventNodeDeleted {
			t.Fatalf("event %+v", e)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ephemeral not deleted on close")
	}
	// A client whose connection drops keeps its session and ephemerals.
	var dialer net.Dialer
	var last net.Conn
	c, _ := connect(t, s.Addr().String(), zk.WithDialer(func(network, address string, timeout time.Duration) (net.Conn, error) {
		conn, err := dialer.Dial(network, address)
		last = conn
		return conn, err
	}))
	sid := c.SessionID()
	must(c.Create("/e2", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)))
	last.Close()
	waitFor(t, "reconnect", func() bool { _, _, err := c.Exists("/e2"); return err == nil })
	if c.SessionID() != sid {
		t.Fatalf("session changed from %x to %x", sid, c.SessionID())
	}
	if _, err := watcher.Sync("/e2"); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := watcher.Exists("/e2"); !ok {
		t.Fatal("ephemeral lost across a reconnect")
	}
}

// TestMassExpiryDeletesEveryEphemeral drops 400 sessions at once, each
// holding an ephemeral, without closing them: the server expires them in
// chunks, each once the one before is applied, and every ephemeral goes.
func TestMassExpiryDeletesEveryEphemeral(t *testing.T) {
	s := startTarget(t, func(c *server.Config) { c.MaxClientCnxns = 0 })
	c, _ := connect(t, s.Addr().String())
	must(c.Create("/mass", nil, 0, zk.WorldACL(zk.PermAll)))
	const n = 400
	// The sessions ping until the drop, as a client does: opening 400 of
	// them on a busy machine can take longer than their 1 s timeout.
	var mu sync.Mutex
	raws := make([]*itest.Raw, 0, n)
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			mu.Lock()
			for _, r := range raws {
				r.Call(zkproto.OpPing, nil, nil)
			}
			mu.Unlock()
		}
	}()
	for i := range n {
		r, err := itest.DialRaw(s.Addr().String(), 1000, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		call(t, r, zkproto.OpCreate, &zkproto.CreateRequest{Path: fmt.Sprintf("/mass/e%d", i), ACL: zkproto.OpenACLUnsafe,
			Flags: zkproto.ModeEphemeral}, nil, zkproto.OK)
		mu.Lock()
		raws = append(raws, r)
		mu.Unlock()
	}
	if _, err := c.Sync("/mass"); err != nil {
		t.Fatal(err)
	}
	if kids, _, err := c.Children("/mass"); err != nil || len(kids) != n {
		t.Fatalf("%d ephemerals before the drop (%v), want %d", len(kids), err, n)
	}
	close(stop)
	<-pinged
	for _, r := range raws {
		r.Close() // no closeSession: the sessions expire
	}
	waitFor(t, "every ephemeral expired", func() bool {
		kids, _, err := c.Children("/mass")
		return err == nil && len(kids) == 0
	})
}

func TestFourLetterWords(t *testing.T) {
	s := startTarget(t, func(c *server.Config) { c.FourLetterWords = []string{"ruok", "srvr", "mntr"} })
	mode := "Mode: standalone"
	if os.Getenv("GIRAFFE_ENSEMBLE") != "" {
		mode = "Giraffe role: "
	}
	for word, want := range map[string]string{"ruok": "imok", "srvr": mode, "mntr": "zk_znode_count",
		"dump": "not executed because it is not in the whitelist"} {
		addr := s.Addr().String()
		out := fourLetter(t, addr, word)
		// An ensemble member without sessions stops serving whenever its
		// own touches take more than a third of minSessionTimeout to
		// commit, and says so; it serves again at the next one.
		for deadline := time.Now().Add(5 * time.Second); strings.HasPrefix(out, notServing) && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
			out = fourLetter(t, addr, word)
		}
		if !strings.Contains(out, want) {
			t.Errorf("%s: %q lacks %q", word, out, want)
		}
	}
}

// notServing is ZooKeeper's answer to most four-letter words while its
// server does not serve.
const notServing = "This ZooKeeper instance is not currently serving requests"

func fourLetter(t *testing.T, addr, word string) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(word))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	out, _ := io.ReadAll(c)
	return string(out)
}

// TestStatReset: srst and crst answer ZooKeeper's lines and the server
// keeps answering, its latency counted from zero again.
func TestStatReset(t *testing.T) {
	s := startTarget(t)
	addr := s.Addr().String()
	c, _ := connect(t, addr)
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatal(err)
	}
	for word, want := range map[string]string{"srst": "Server stats reset.\n", "crst": "Connection stats reset.\n"} {
		if out := fourLetter(t, addr, word); out != want && !strings.HasPrefix(out, notServing) {
			t.Fatalf("%s: %q", word, out)
		}
	}
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatalf("after srst: %v", err)
	}
	if out := fourLetter(t, addr, "ruok"); out != "imok" {
		t.Fatalf("ruok after srst: %q", out)
	}
}
