package server_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/go-zookeeper/zk"
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

	// A create of 10 KiB appends one record of its data, its path and a
	// few headers to the log.
	logged := func() float64 {
		_, body := request(t, http.MethodGet, "http://"+s.MetricsAddr().String()+"/metrics", "", "")
		for _, line := range strings.Split(body, "\n") {
			if v, ok := strings.CutPrefix(line, "giraffe_log_bytes_written_total "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatal("/metrics lacks giraffe_log_bytes_written_total")
		return 0
	}
	before := logged()
	if _, err := zc.Create("/big", make([]byte, 10<<10), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if grew := logged() - before; grew < 10<<10 || grew > 10<<10+512 {
		t.Errorf("a 10 KiB create grew giraffe_log_bytes_written_total by %g bytes", grew)
	}
}
