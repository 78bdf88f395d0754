package gpaxos_test

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/giraffe-coord/giraffe/internal/gpaxos/gpaxostest"
)

// TestInteraction runs every script in testdata/ (README.md there lists the
// commands) against a fresh gpaxostest environment and compares each
// command's transcript with the one the script records. After a protocol
// change, `go test ./internal/gpaxos -run TestInteraction -rewrite`
// regenerates the transcripts; review the diff as the change's effect.
// Scripts named bug_* hold hand-written expectations of behaviour the
// protocol lacks: -rewrite leaves them alone, so that it never records a
// bug as the expected outcome.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.HasSuffix(path, ".txt") {
			t.Skip("not a script")
		}
		if f := flag.Lookup("rewrite"); f != nil && f.Value.String() == "true" &&
			strings.HasPrefix(filepath.Base(path), "bug_") {
			t.Skip("bug_ scripts keep their hand-written expectations")
		}
		env := gpaxostest.NewEnv()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return env.Handle(t, *d)
		})
	})
}
