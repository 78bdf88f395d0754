package recipes

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestLockCancel: a Lock whose context ends while it waits returns the
// context's error and leaves no node behind, so the next contender is not
// blocked by it.
func TestLockCancel(t *testing.T) {
	addr := lkStartGiraffe(t)
	for _, k := range lkKinds {
		t.Run(k.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			path := "/cancel/" + k.name
			a, b, c := lkConnect(t, addr), lkConnect(t, addr), lkConnect(t, addr)
			la := k.newLock(a, path, 0) // client 0 is exclusive for every kind
			if err := la.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			before, _, err := c.Children(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			lb := k.newLock(b, path, 3)
			short, cancelShort := context.WithTimeout(ctx, 150*time.Millisecond)
			err = lb.Lock(short)
			cancelShort()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Lock while held: %v", err)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				after, _, err := c.Children(ctx, path)
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(after)
				slices.Sort(before)
				if slices.Equal(after, before) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("children %v after the cancelled Lock, %v before", after, before)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if err := la.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			lc := k.newLock(c, path, 0)
			if err := lc.Lock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := lc.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}
