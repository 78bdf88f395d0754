package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestStandaloneMetrics: a standalone server exports its role and the
// latency of the requests a ZooKeeper client made, by operation.
func TestStandaloneMetrics(t *testing.T) {
	s, _ := startLogged(t, nil)
	zc, _ := connect(t, s.Addr().String())
	for i := 0; i < 3; i++ {
		if _, _, err := zc.Get("/"); err != nil {
			t.Fatal(err)
		}
	}
	_, body := request(t, http.MethodGet, "http://"+s.MetricsAddr().String()+"/metrics", "", "")
	for _, want := range []string{`giraffe_role{role="standalone"} 1`, `giraffe_role{role="leader"} 0`,
		`giraffe_request_seconds_count{op="getData"} 3`, `giraffe_sessions_connected 1`} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "giraffe_epoch ") {
		t.Error("a standalone server exports an epoch")
	}
}
