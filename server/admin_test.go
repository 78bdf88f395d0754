package server_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/server"
)

// syncBuffer is a log destination several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startLogged starts a standalone server with metrics and admin ports
// (mutate may change them) and returns it with its log.
func startLogged(t *testing.T, mutate func(*server.Config)) (*server.Server, *syncBuffer) {
	t.Helper()
	mport, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	aport, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	cfg.MetricsPort = mport
	cfg.AdminPort = aport
	if mutate != nil {
		mutate(&cfg)
	}
	log := &syncBuffer{}
	s, err := server.New(cfg, slog.New(slog.NewTextHandler(log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, log
}

// request sends one request, with token as a bearer token unless empty,
// and returns the status and body.
func request(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func writeToken(t *testing.T, token string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "admin.token")
	if err := os.WriteFile(p, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMetricsPortIsReadOnly: the metrics port answers GETs of /metrics
// and refuses every other method, on every path, with 405; the admin
// endpoints are not there.
func TestMetricsPortIsReadOnly(t *testing.T) {
	s, log := startLogged(t, nil)
	base := "http://" + s.MetricsAddr().String()
	if code, body := request(t, http.MethodGet, base+"/metrics", "", ""); code != http.StatusOK || !strings.Contains(body, "giraffe_znodes") {
		t.Fatalf("GET /metrics: %d\n%s", code, body)
	}
	for _, path := range []string{"/faults", "/leave", "/join", "/metrics", "/membership"} {
		for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			if code, _ := request(t, method, base+path, "", "isolate"); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s on the metrics port: %d, want 405", method, path, code)
			}
		}
	}
	for _, path := range []string{"/faults", "/leave", "/join"} {
		if code, _ := request(t, http.MethodGet, base+path, "", ""); code != http.StatusNotFound {
			t.Errorf("GET %s on the metrics port: %d, want 404", path, code)
		}
	}
	if !strings.Contains(log.String(), "metrics port: request refused") {
		t.Errorf("no log line for the refused requests:\n%s", log)
	}
}

// TestAdminPortNeedsTheToken: every admin request without the token, or
// with another, is refused with 401 and a log line saying why and from
// where, never the token; the admin port binds 127.0.0.1 unless told
// otherwise; /faults answers 404 while fault injection is off.
func TestAdminPortNeedsTheToken(t *testing.T) {
	const token = "0123456789abcdef"
	s, log := startLogged(t, func(c *server.Config) {
		c.ClientAddr = "" // every interface: the admin port still binds loopback only
		c.AdminTokenFile = writeToken(t, token)
	})
	addr, ok := s.AdminAddr().(*net.TCPAddr)
	if !ok || !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("admin port on %v, want 127.0.0.1", s.AdminAddr())
	}
	base := "http://" + addr.String()
	for _, tc := range []struct{ token, reason string }{{"", "no token"}, {"0123456789abcdeF", "wrong token"}} {
		for _, path := range []string{"/faults", "/leave", "/join", "/membership"} {
			code, _ := request(t, http.MethodPost, base+path, tc.token, `{"id":1}`)
			if code != http.StatusUnauthorized {
				t.Errorf("POST %s with token %q: %d, want 401", path, tc.token, code)
			}
		}
		if !strings.Contains(log.String(), "reason=\""+tc.reason+"\"") {
			t.Errorf("no log line saying %q:\n%s", tc.reason, log)
		}
	}
	if !strings.Contains(log.String(), "remote=127.0.0.1:") {
		t.Errorf("the refusals do not name the remote address:\n%s", log)
	}
	code, body := request(t, http.MethodPost, base+"/faults", token, "isolate")
	if code != http.StatusNotFound || !strings.Contains(body, "giraffe.faultInjection=true") {
		t.Errorf("POST /faults with fault injection off: %d %q, want 404 saying how to turn it on", code, body)
	}
	// A standalone server has no membership: the token passes, the
	// request is answered for what it is.
	if code, _ := request(t, http.MethodGet, base+"/membership", token, ""); code != http.StatusNotFound {
		t.Errorf("GET /membership with the token on a standalone server: %d, want 404", code)
	}
	if strings.Contains(log.String(), token) || strings.Contains(log.String(), "0123456789abcdeF") {
		t.Errorf("a token is in the log:\n%s", log)
	}
}

// TestAdminPortClosedWithoutToken: an admin port without a token file
// does not open, and the log says why.
func TestAdminPortClosedWithoutToken(t *testing.T) {
	var port int
	s, log := startLogged(t, func(c *server.Config) { port = c.AdminPort })
	if a := s.AdminAddr(); a != nil {
		t.Fatalf("admin port open on %v without a token file", a)
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), time.Second); err == nil {
		c.Close()
		t.Fatalf("something listens on the admin port %d", port)
	}
	if !strings.Contains(log.String(), "admin port closed") || !strings.Contains(log.String(), "giraffe.adminTokenFile") {
		t.Errorf("the log does not say why the admin port is closed:\n%s", log)
	}
}
