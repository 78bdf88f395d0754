package server

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/transport"
)

// faultsHandler serves /faults on the admin port: GET shows the faults
// injected into this server's peer transport, POST applies a spec
// (transport.ParseFaultSpec: "drop ID P; delay ID D [JITTER]; block ID
// [in|out|both]; unblock ID; isolate; pause; resume; slowsnap ID D;
// heal"), or
// "stall-fsync D [N]": the next N (default 1) fsyncs of the log (the
// replica's, or a standalone server's) each take D longer, or "diverge
// NAME": namespace NAME changes on this server alone (divergence.go).
// It exists for tests (the kernel here has no netem), and only with
// Config.FaultInjection: otherwise it answers 404 and the transport has no
// fault hooks to set.
func (s *Server) faultsHandler(w http.ResponseWriter, r *http.Request) {
	if !s.cfg.FaultInjection {
		http.Error(w, "fault injection is off: start the server with giraffe.faultInjection=true", http.StatusNotFound)
		return
	}
	var body []byte
	var err error
	if r.Method == http.MethodPost {
		body, err = io.ReadAll(io.LimitReader(r.Body, 4096))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(body)), "stall-fsync") {
			s.stallFsync(w, string(body))
			return
		}
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(body)), "diverge") {
			if err := s.divergeNamespace(string(body)); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintln(w, "diverged")
			return
		}
	}
	if s.faults == nil {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		var spec transport.FaultSpec
		if err == nil {
			spec, err = transport.ParseFaultSpec(string(body))
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.faults.Apply(spec)
		s.log.Warn("fault injection changed", "faults", s.faults.Spec().String())
	}
	fmt.Fprintln(w, s.faults.Spec().String())
}

// stallFsync applies "stall-fsync D [N]".
func (s *Server) stallFsync(w http.ResponseWriter, spec string) {
	f := strings.Fields(spec)
	var d time.Duration
	var err error
	n := 1
	if len(f) >= 2 && len(f) <= 3 {
		d, err = time.ParseDuration(f[1])
		if err == nil && len(f) == 3 {
			n, err = strconv.Atoi(f[2])
		}
	} else {
		err = fmt.Errorf("want stall-fsync DURATION [COUNT]")
	}
	if err == nil && (d <= 0 || d > time.Minute || n <= 0) {
		err = fmt.Errorf("stall-fsync: duration in (0, 1m] and a positive count")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch p := s.pipe.(type) {
	case *replicated:
		p.rep.StallFsync(d, n)
	case *pipeline:
		p.stall.set(d, n)
	}
	s.log.Warn("fault injection: fsync stall", "delay", d, "count", n)
	fmt.Fprintf(w, "stall-fsync %v %d\n", d, n)
}
