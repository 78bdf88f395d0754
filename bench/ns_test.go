package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestSummarizeAndCDF checks how the namespace benchmark sums up its
// clients: counts and percentiles per class and kind, and a CDF that
// rises to 1 for every class and kind that has requests, and has no rows
// for one that has none.
func TestSummarizeAndCDF(t *testing.T) {
	var clients []*nsClient
	for i, class := range []string{ClassStrong, ClassStrong, ClassWeak} {
		c := &nsClient{class: class, index: i, write: NewHistogram(), read: NewHistogram()}
		for us := int64(1000); us <= 10000; us += 1000 {
			c.record(true, zkproto.OK, us*int64(i+1))
		}
		if class == ClassStrong {
			c.record(false, zkproto.OK, 200)
		}
		c.record(true, zkproto.ErrNoNode, 5) // an error: counted, not timed
		clients = append(clients, c)
	}
	res := &NSResult{hists: map[string]*hdrhistogram.Histogram{}}
	res.Strong = summarize(res.hists, ClassStrong, "/1", clients)
	res.Weak = summarize(res.hists, ClassWeak, "/2", clients)

	s, w := res.Strong, res.Weak
	if s.Clients != 2 || s.Ops != 22 || s.Writes != 20 || s.Reads != 2 || s.Errors != 2 {
		t.Fatalf("strong: %+v", s)
	}
	if w.Clients != 1 || w.Ops != 10 || w.Writes != 10 || w.Reads != 0 || w.Errors != 1 {
		t.Fatalf("weak: %+v", w)
	}
	if w.WriteP50Ms < 14.9 || w.WriteP50Ms > 15.1 || w.ReadMeanMs != 0 {
		t.Fatalf("weak: write p50 %v ms, read mean %v ms; want 15, 0", w.WriteP50Ms, w.ReadMeanMs)
	}
	if s.ReadP50Ms < 0.19 || s.ReadP50Ms > 0.21 || s.WriteP999Ms < 19.9 {
		t.Fatalf("strong: read p50 %v ms, write p99.9 %v ms", s.ReadP50Ms, s.WriteP999Ms)
	}

	var b bytes.Buffer
	if err := res.WriteCDF(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if lines[0] != "class,op,latency_ms,cdf" {
		t.Fatalf("header %q", lines[0])
	}
	last := map[string]float64{}
	prevMs := map[string]float64{}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		key := f[0] + " " + f[1]
		ms, _ := strconv.ParseFloat(f[2], 64)
		cdf, _ := strconv.ParseFloat(f[3], 64)
		if cdf <= last[key] || ms <= prevMs[key] {
			t.Fatalf("%s: not rising at %q", key, l)
		}
		last[key], prevMs[key] = cdf, ms
	}
	want := map[string]bool{"strong write": true, "strong read": true, "weak write": true}
	if len(last) != len(want) {
		t.Fatalf("CDFs of %v, want %v", last, want)
	}
	for key := range want {
		if last[key] != 1 {
			t.Fatalf("%s: CDF ends at %v", key, last[key])
		}
	}
}
