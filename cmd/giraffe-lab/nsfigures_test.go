package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNSFigures runs giraffe-lab nsfigures over a results.jsonl as
// scripts/bench-ns-figures.sh writes it: two runs of one configuration
// pool their requests, a class without clients shows a dash, a failed run
// is named, and every write ratio gets its tables and its PNG plot.
func TestNSFigures(t *testing.T) {
	dir := t.TempDir()
	results := strings.Join([]string{
		// off, 100% writes, 3/3, twice: strong writes pool to (10*100 + 20*300)/400 = 17.5.
		`{"system":"off","strong_clients":3,"weak_clients":3,"elapsed_s":12,"strong":{"clients":3,"ops":100,"writes":100,"write_mean_ms":10},"weak":{"clients":3,"ops":50,"writes":50,"write_mean_ms":4},"write_ratio":1,"seconds":3}`,
		`{"system":"off","strong_clients":3,"weak_clients":3,"elapsed_s":12,"strong":{"clients":3,"ops":300,"writes":300,"write_mean_ms":20},"weak":{"clients":3,"ops":50,"writes":50,"write_mean_ms":6},"write_ratio":1,"seconds":3}`,
		// doublezk before shortcircuit in the file; the table orders them as the paper's systems.
		`{"system":"doublezk","strong_clients":6,"weak_clients":0,"elapsed_s":20,"strong":{"clients":6,"ops":600,"writes":600,"write_mean_ms":8},"weak":{"clients":0},"write_ratio":1,"seconds":3}`,
		`{"system":"shortcircuit","strong_clients":6,"weak_clients":0,"elapsed_s":12,"write_ratio":1,"failed":"bench: strong client 2: EOF\nconnection closed"}`,
		// 50% writes: reads count in the mean of every request: (2*10 + 1*10)/20 = 1.5.
		`{"system":"off","strong_clients":0,"weak_clients":6,"elapsed_s":12,"strong":{"clients":0},"weak":{"clients":6,"ops":20,"writes":10,"reads":10,"write_mean_ms":2,"read_mean_ms":1},"write_ratio":0.5,"seconds":3}`,
		"",
	}, "\n")
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(results), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := newNSFiguresCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{dir})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"**100% writes: write latency mean, ms (strong / weak clients)**",
		"| strong/weak clients | off | shortcircuit | doublezk |",
		"| 6/0 |  | failed | 8.00 / – |",
		"| 3/3 | 17.50 / 5.00 |  |  |",
		"**50% writes: write latency mean",
		"| 0/6 | – / 2.00 |",
		"**50% writes: latency mean of every request (writes and reads)",
		"| 0/6 | – / 1.50 |",
		"- failed: shortcircuit, 100% writes, 6/0: connection closed",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("no %q in\n%s", want, md)
		}
	}
	if strings.Index(md, "| 6/0 |") > strings.Index(md, "| 3/3 |") {
		t.Errorf("mixes not from all strong to all weak:\n%s", md)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "figures.md"))
	if err != nil || string(saved) != md {
		t.Errorf("figures.md (%v) is not what was printed", err)
	}
	for _, name := range []string{"ns-figures-write100.png", "ns-figures-write50.png"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Errorf("%s is not a PNG", name)
		}
	}
}
