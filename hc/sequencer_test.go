package hc

import (
	"errors"
	"testing"
)

func TestSequencerRoundTrip(t *testing.T) {
	for _, s := range []Sequencer{
		{Lock: "/a", Cluster: "w1", Generation: 1},
		{Lock: "/a/b:c/d", Cluster: "worker-2.x", Generation: 1 << 40},
	} {
		got, err := ParseSequencer(s.String())
		if err != nil || got != s {
			t.Fatalf("ParseSequencer(%q) = %+v, %v", s.String(), got, err)
		}
	}
}

func TestParseSequencerRejects(t *testing.T) {
	for _, bad := range []string{
		"", "hcseq1", "hcseq1:w1:1", "zkseq1:w1:1:/a", "hcseq1:w1:0:/a", "hcseq1:w1:-3:/a",
		"hcseq1:w1:x:/a", "hcseq1::1:/a", "hcseq1:w/1:1:/a", "hcseq1:w1:1:a", "hcseq1:w1:1:/", "hcseq1:w1:1:/a/",
	} {
		if _, err := ParseSequencer(bad); !errors.Is(err, ErrBadSequencer) {
			t.Errorf("ParseSequencer(%q) = %v, want ErrBadSequencer", bad, err)
		}
	}
}

func FuzzParseSequencer(f *testing.F) {
	f.Add("hcseq1:w1:7:/a/b")
	f.Add("hcseq1:w1:7:/a:b")
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := ParseSequencer(s)
		if err != nil {
			return
		}
		again, err := ParseSequencer(seq.String())
		if err != nil || again != seq {
			t.Fatalf("%q parses to %+v, which re-parses to %+v, %v", s, seq, again, err)
		}
	})
}
