package transport

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFaultSpec(t *testing.T) {
	tests := []struct {
		in   string
		want FaultSpec
	}{
		{"", nil},
		{" ; \n ;", nil},
		{"drop 3 0.5", FaultSpec{{Kind: FaultDrop, Peer: 3, Dir: Out, Prob: 0.5}}},
		{"drop * 1 in", FaultSpec{{Kind: FaultDrop, Peer: AllPeers, Dir: In, Prob: 1}}},
		{"delay 2 40ms 10ms", FaultSpec{{Kind: FaultDelay, Peer: 2, Dir: Out, Delay: 40 * time.Millisecond, Jitter: 10 * time.Millisecond}}},
		{"delay 2 1s both", FaultSpec{{Kind: FaultDelay, Peer: 2, Dir: Both, Delay: time.Second}}},
		{"block 4", FaultSpec{{Kind: FaultBlock, Peer: 4, Dir: Out}}},
		{"BLOCK 4 IN", FaultSpec{{Kind: FaultBlock, Peer: 4, Dir: In}}},
		{"unblock * both", FaultSpec{{Kind: FaultUnblock, Peer: AllPeers, Dir: Both}}},
		{"drop 3 0.5; delay 2 40ms 10ms; block 4; isolate; heal", FaultSpec{
			{Kind: FaultDrop, Peer: 3, Dir: Out, Prob: 0.5},
			{Kind: FaultDelay, Peer: 2, Dir: Out, Delay: 40 * time.Millisecond, Jitter: 10 * time.Millisecond},
			{Kind: FaultBlock, Peer: 4, Dir: Out},
			{Kind: FaultIsolate, Dir: Out},
			{Kind: FaultHeal, Dir: Out},
		}},
		{"pause\nresume", FaultSpec{{Kind: FaultPause, Dir: Out}, {Kind: FaultResume, Dir: Out}}},
		{"slowsnap 1 2s", FaultSpec{{Kind: FaultSlowSnapshot, Peer: 1, Dir: In, Delay: 2 * time.Second}}},
	}
	for _, tt := range tests {
		got, err := ParseFaultSpec(tt.in)
		if err != nil {
			t.Errorf("ParseFaultSpec(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseFaultSpec(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		// String is parsed back to the same commands.
		again, err := ParseFaultSpec(got.String())
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Errorf("String round trip of %q: %q → %+v, %v", tt.in, got.String(), again, err)
		}
	}
}

func TestParseFaultSpecErrors(t *testing.T) {
	for _, in := range []string{
		"explode", "drop", "drop 3", "drop 3 1.5", "drop 3 -0.1", "drop 3 NaN", "drop x 0.5", "drop 0 0.5",
		"drop 3 0.5 sideways", "delay 2", "delay 2 -1ms", "delay 2 40m", "delay 2 1ms 2ms 3ms",
		"block", "block 4 5", "isolate 3", "heal now", "drop 3 0.5; bogus",
		"slowsnap 1", "slowsnap 1 2s both", "slowsnap 1 2m",
	} {
		if spec, err := ParseFaultSpec(in); err == nil {
			t.Errorf("ParseFaultSpec(%q) = %v, want an error", in, spec)
		} else if !strings.HasPrefix(err.Error(), "transport: fault") {
			t.Errorf("ParseFaultSpec(%q): error %q does not name the command", in, err)
		}
	}
}

// TestApplyFaultSpec drives a Faults through the text syntax.
func TestApplyFaultSpec(t *testing.T) {
	f := newFaults(1)
	spec, err := ParseFaultSpec("block 4; delay 2 40ms in; pause")
	if err != nil {
		t.Fatal(err)
	}
	f.Apply(spec)
	now := time.Unix(0, 0)
	if _, r := f.route(Out, 4, now); r != dropBlocked {
		t.Fatal("block 4 not applied")
	}
	if _, r := f.route(In, 4, now); r != dropNone {
		t.Fatal("block 4 cut the inbound link")
	}
	if due, _ := f.route(In, 2, now); due.Sub(now) != 40*time.Millisecond {
		t.Fatalf("delay 2 40ms in: due after %v", due.Sub(now))
	}
	if !f.Paused() {
		t.Fatal("pause not applied")
	}
	spec, _ = ParseFaultSpec("heal")
	f.Apply(spec)
	if _, r := f.route(Out, 4, now); r != dropNone || f.Paused() {
		t.Fatal("heal did not clear")
	}
}
