package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestStandaloneMetrics: a standalone server exports the latency of the
// requests a ZooKeeper client made, by operation.
func TestStandaloneMetrics(t *testing.T) {
	s, _ := startLogged(t, nil)
	zc, _ := connect(t, s.Addr().String())
	for i := 0; i < 3; i++ {
		if _, _, err := zc.Get("/"); err != nil {
			t.Fatal(err)
		}
	}
	_, body := request(t, http.MethodGet, "http://"+s.MetricsAddr().String()+"/metrics", "", "")
	for _, want := range []string{`giraffe_request_seconds_count{op="getData"} 3`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
