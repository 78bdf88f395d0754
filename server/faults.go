package server

import (
	"fmt"
	"io"
	"net/http"

	"github.com/giraffe-coord/giraffe/internal/transport"
)

// faultsHandler serves /faults on the metrics port: GET shows the faults
// injected into this server's peer transport, POST applies a spec
// (transport.ParseFaultSpec: "drop ID P; delay ID D [JITTER]; block ID
// [in|out|both]; unblock ID; isolate; pause; resume; heal").
// It exists for tests (the kernel here has no netem).
func (s *Server) faultsHandler(w http.ResponseWriter, r *http.Request) {
	if s.faults == nil {
		http.Error(w, "not an ensemble member", http.StatusNotFound)
		return
	}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
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
