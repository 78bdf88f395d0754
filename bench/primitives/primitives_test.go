package primitives

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/embed"
	"github.com/giraffe-coord/giraffe/recipes"
)

// TestMeasureAndOutputs runs a small point against an in-process server:
// every kind is measured, each acquisition costs at least the added round
// trip, and the CSV and the plot are written.
func TestMeasureAndOutputs(t *testing.T) {
	cfg := embed.Standalone(t.TempDir())
	cfg.ForceSync = false
	srv, err := embed.Start(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	setup := Setup{Servers: []string{srv.Addr().String()}, Requests: 10, Clients: 4, Seed: 3}
	const rtt = 4 * time.Millisecond
	var rs []Result
	for _, s := range []time.Duration{time.Millisecond, 5 * time.Millisecond} {
		got, err := Measure(t.Context(), setup, Point{UserRTT: rtt, Interarrival: 5 * time.Millisecond, Service: s})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, got...)
	}
	if len(rs) != 2*len(recipes.LockKinds) {
		t.Fatalf("%d results, want %d", len(rs), 2*len(recipes.LockKinds))
	}
	for _, r := range rs {
		if r.Requests != 10 || r.P50 < rtt || r.Mean < rtt || r.P99 < r.P50 {
			t.Fatalf("%s: %+v", r.Kind, r)
		}
	}
	if gaps := Gaps(rs); len(gaps) != 2 || gaps[0].Best == "reactive" || gaps[0].Ratio <= 0 {
		t.Fatalf("gaps: %+v", gaps)
	}
	dir := t.TempDir()
	path, err := WriteCSV(dir, "x", rs)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if lines := strings.Count(string(b), "\n"); lines != len(rs)+1 {
		t.Fatalf("CSV has %d lines", lines)
	}
	e := Experiment{Name: "x", Title: "t", X: "service"}
	if _, err := WritePlot(dir, e, rs); err != nil {
		t.Fatal(err)
	}
	e = Experiment{Name: "grid", Title: "t"}
	if _, err := WritePlot(dir, e, rs); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"x.svg", "grid.svg"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 1000 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// TestSummarize counts the points where the reactive lock is within 10% of
// the best fixed kind and those where it is clearly over, and names the
// worst.
func TestSummarize(t *testing.T) {
	at := func(service time.Duration, ratio, z float64) ReactiveGap {
		return ReactiveGap{Point: Point{Service: service}, Best: "queue-sync", BestMean: 10 * time.Millisecond,
			Reactive: time.Duration(ratio * float64(10*time.Millisecond)), Ratio: ratio, Z: z}
	}
	var b strings.Builder
	Summarize(&b, []ReactiveGap{at(time.Millisecond, 1.05, 0.5), at(2*time.Millisecond, 1.3, 3), at(3*time.Millisecond, 1.2, 1)})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 ||
		lines[0] != "reactive lock within 10% of the best fixed kind at 1 of 3 points; over it by two standard errors or more at 1" ||
		!strings.HasPrefix(lines[1], "  over: ") || !strings.Contains(lines[1], "service 2ms") ||
		!strings.Contains(lines[2], "service 3ms") ||
		!strings.HasPrefix(lines[3], "worst: ") || !strings.Contains(lines[3], "x1.30") {
		t.Fatalf("summary:\n%s", b.String())
	}
}
