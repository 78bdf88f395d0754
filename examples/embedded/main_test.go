package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs the example: every worker's every round is in the log,
// once, because the lock admitted one writer at a time.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(&out, t.TempDir(), 5, 4); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	seen := map[string]int{}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "worker ") {
			seen[l]++
		}
	}
	if len(seen) != 20 {
		t.Fatalf("%d distinct log lines, want 20:\n%s", len(seen), out.String())
	}
	for l, n := range seen {
		if n != 1 {
			t.Fatalf("%q appears %d times", l, n)
		}
	}
}
