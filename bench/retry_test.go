package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeBackoff is the benchmark's policy on a clock that only its sleeps
// move, with rand as its random source.
func fakeBackoff(budget time.Duration, rand func(int64) int64) (backoff, *time.Time) {
	now := time.Unix(1000, 0)
	b := newBackoff(budget)
	b.now = func() time.Time { return now }
	b.rand = rand
	b.sleep = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		now = now.Add(d)
		return nil
	}
	return b, &now
}

func lowest(int64) int64    { return 0 }
func highest(n int64) int64 { return n - 1 }

// TestBackoffPauses: the pause before retry k doubles from retryFirst and
// stops at retryMax, and is drawn in the upper half of that: d/2 with the
// lowest draw, d with the highest; a retry count past any shift gives
// retryMax.
func TestBackoffPauses(t *testing.T) {
	want := []time.Duration{50, 100, 200, 400, 800, 1600, 2000, 2000}
	for k, w := range want {
		w *= time.Millisecond
		lo, _ := fakeBackoff(0, lowest)
		hi, _ := fakeBackoff(0, highest)
		if got := lo.pause(k + 1); got != w/2 {
			t.Errorf("retry %d, lowest draw: %v, want %v", k+1, got, w/2)
		}
		if got := hi.pause(k + 1); got != w {
			t.Errorf("retry %d, highest draw: %v, want %v", k+1, got, w)
		}
	}
	for _, k := range []int{40, 62, 63, 64, 1000} {
		if hi, _ := fakeBackoff(0, highest); hi.pause(k) != retryMax {
			t.Errorf("retry %d: %v, want %v", k, hi.pause(k), retryMax)
		}
	}
	// Any draw stays in [d/2, d].
	src := rand.New(rand.NewPCG(1, 2))
	b, _ := fakeBackoff(0, src.Int64N)
	for i := 0; i < 10000; i++ {
		k := 1 + src.IntN(12)
		d := min(retryFirst<<(k-1), retryMax)
		if p := b.pause(k); p < d/2 || p > d {
			t.Fatalf("retry %d: pause %v outside [%v, %v]", k, p, d/2, d)
		}
	}
}

// TestBackoffRetryMovesOn: each attempt after a refusal goes to the next
// server of the list, wrapping, from the session's own; the pauses before
// them add up on the clock; the retries are counted.
func TestBackoffRetryMovesOn(t *testing.T) {
	b, now := fakeBackoff(time.Minute, highest)
	start := *now
	servers := []string{"a", "b", "c"}
	var tried []string
	var deadlines []time.Time
	retries, err := b.retry(context.Background(), servers, 2, func(addr string, end time.Time) error {
		tried = append(tried, addr)
		deadlines = append(deadlines, end)
		if len(tried) < 5 {
			return errors.New("handshake: EOF")
		}
		return nil
	})
	if err != nil || retries != 4 {
		t.Fatalf("retry = %d, %v; want 4, nil", retries, err)
	}
	if want := []string{"c", "a", "b", "c", "a"}; !slices.Equal(tried, want) {
		t.Fatalf("servers tried %v, want %v", tried, want)
	}
	if waited, want := now.Sub(start), (50+100+200+400)*time.Millisecond; waited != want {
		t.Fatalf("waited %v, want %v", waited, want)
	}
	for _, d := range deadlines {
		if !d.Equal(start.Add(time.Minute)) {
			t.Fatalf("attempt deadline %v, want the budget's end %v", d, start.Add(time.Minute))
		}
	}
}

// TestBackoffBudget: a session that every server refuses gives up before
// the pause that would end past its budget, saying why and what the last
// attempt met.
func TestBackoffBudget(t *testing.T) {
	b, now := fakeBackoff(time.Second, highest)
	start := *now
	attempts := 0
	retries, err := b.retry(context.Background(), []string{"a"}, 0, func(string, time.Time) error {
		attempts++
		return fmt.Errorf("refusal %d", attempts)
	})
	// Pauses 50+100+200+400 ms end at 750 ms; the next, 800 ms, would
	// end past 1 s.
	if attempts != 5 || retries != 4 {
		t.Fatalf("%d attempts, %d retries; want 5, 4", attempts, retries)
	}
	if err == nil || !strings.Contains(err.Error(), "within 1s") || !strings.Contains(err.Error(), "refusal 5") {
		t.Fatalf("error %v", err)
	}
	if waited := now.Sub(start); waited != 750*time.Millisecond {
		t.Fatalf("waited %v", waited)
	}
}

// TestBackoffStops: an expired session is final (no other server will
// take it), and an ended context stops the retries.
func TestBackoffStops(t *testing.T) {
	b, _ := fakeBackoff(time.Minute, highest)
	attempts := 0
	_, err := b.retry(context.Background(), []string{"a", "b"}, 0, func(string, time.Time) error {
		attempts++
		return fmt.Errorf("session 0x1: %w", errSessionExpired)
	})
	if !errors.Is(err, errSessionExpired) || attempts != 1 {
		t.Fatalf("expired: %d attempts, %v", attempts, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	b, _ = fakeBackoff(0, highest)
	attempts = 0
	_, err = b.retry(ctx, []string{"a", "b"}, 0, func(string, time.Time) error {
		if attempts++; attempts == 3 {
			cancel()
		}
		return errors.New("refused")
	})
	if !errors.Is(err, context.Canceled) || attempts != 3 {
		t.Fatalf("cancelled: %d attempts, %v", attempts, err)
	}
}
