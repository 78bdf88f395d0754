package recipes

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestSequencerRoundTrip(t *testing.T) {
	for _, s := range []Sequencer{
		{Path: "/a/__tas__", Mode: Exclusive, Generation: 1},
		{Path: "/a:b/x__rlock__0000000001", Mode: Shared, Generation: 1 << 40},
	} {
		got, err := ParseSequencer(s.String())
		if err != nil || got != s {
			t.Errorf("ParseSequencer(%q) = %+v %v", s.String(), got, err)
		}
	}
	for _, bad := range []string{
		"", "zkseq1", "zkseq2:exclusive:1:/a", "zkseq1:owner:1:/a", "zkseq1:exclusive:x:/a",
		"zkseq1:exclusive:0:/a", "zkseq1:exclusive:-3:/a", "zkseq1:exclusive:1:a", "zkseq1:exclusive:1:/",
		"zkseq1:exclusive:1:/a/", "zkseq1:shared:99999999999999999999:/a",
	} {
		if _, err := ParseSequencer(bad); !errors.Is(err, ErrBadSequencer) {
			t.Errorf("ParseSequencer(%q): %v", bad, err)
		}
	}
}

// FuzzParseSequencer: no input panics, and what parses encodes back to
// itself.
func FuzzParseSequencer(f *testing.F) {
	f.Add("zkseq1:exclusive:12:/a/__tas__")
	f.Add("zkseq1:shared:1:/a:b")
	f.Fuzz(func(t *testing.T, s string) {
		seq, err := ParseSequencer(s)
		if err != nil {
			return
		}
		again, err := ParseSequencer(seq.String())
		if err != nil || again != seq {
			t.Fatalf("%q -> %+v -> %q -> %+v %v", s, seq, seq.String(), again, err)
		}
	})
}

// TestValidateSequencer: a sequencer is valid while its hold lasts, and a
// later hold of the same lock (same node path for test-and-set) does not
// revive it.
func TestValidateSequencer(t *testing.T) {
	addr := lkStartGiraffe(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a, b, v := lkConnect(t, addr), lkConnect(t, addr), lkConnect(t, addr)
	la, lb := NewTASLock(a, "/seq"), NewTASLock(b, "/seq")
	if _, err := la.Sequencer(); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("sequencer before Lock: %v", err)
	}
	if err := la.Unlock(ctx); !errors.Is(err, ErrNotLocked) {
		t.Fatalf("unlock before Lock: %v", err)
	}
	if err := la.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := la.Lock(ctx); !errors.Is(err, ErrAlreadyLocked) {
		t.Fatalf("second Lock: %v", err)
	}
	sa, _ := la.Sequencer()
	if err := ValidateSequencer(ctx, v, sa); err != nil {
		t.Fatalf("held: %v", err)
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lb.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	sb, _ := lb.Sequencer()
	if sb.Path != sa.Path || sb.Generation == sa.Generation {
		t.Fatalf("holds %+v and %+v", sa, sb)
	}
	if err := ValidateSequencer(ctx, v, sa); !errors.Is(err, ErrInvalidSequencer) {
		t.Fatalf("old hold: %v", err)
	}
	if err := ValidateSequencer(ctx, v, sb); err != nil {
		t.Fatalf("new hold: %v", err)
	}
	// A persistent node with the right czxid is not a hold.
	_, st, err := v.Create(ctx, "/persistent", nil, client.Persistent, zkproto.OpenACLUnsafe)
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateSequencer(ctx, v, Sequencer{Path: "/persistent", Mode: Exclusive, Generation: st.Czxid}); !errors.Is(err, ErrInvalidSequencer) {
		t.Fatalf("persistent node: %v", err)
	}
	if err := ValidateSequencer(ctx, v, Sequencer{}); !errors.Is(err, ErrInvalidSequencer) {
		t.Fatalf("zero sequencer: %v", err)
	}
}
