package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestAsyncFIFO pipelines hundreds of calls while the server's replies are
// held back, then checks that they ran in submission order (each setData
// expects the version the previous one left, each getData sees the write
// just before it) and completed in submission order.
func TestAsyncFIFO(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()})
	mustCreate(t, c, "/f", "", Persistent)

	const n = 300
	type entry struct {
		done <-chan struct{}
		// check returns an error if the call's result is not what the
		// submission order implies.
		check func() error
	}
	var calls []entry
	resume := px.pause()
	for i := range n {
		set := c.SetAsync("/f", []byte(fmt.Sprint(i)), int32(i))
		calls = append(calls, entry{set.Done(), func() error {
			st, err := set.Result()
			if err != nil || st.Version != int32(i+1) {
				return fmt.Errorf("set %d: %+v %v", i, st, err)
			}
			return nil
		}})
		get := c.GetAsync("/f")
		calls = append(calls, entry{get.Done(), func() error {
			r, err := get.Result()
			if err != nil || string(r.Data) != fmt.Sprint(i) {
				return fmt.Errorf("get after set %d: %q %v", i, r.Data, err)
			}
			return nil
		}})
		if i%50 == 0 { // errors take their turn like everything else
			dup := c.CreateAsync("/f", nil, Persistent, zkproto.OpenACLUnsafe)
			calls = append(calls, entry{dup.Done(), func() error {
				if err := dup.Err(); err != zkproto.ErrNodeExists {
					return fmt.Errorf("duplicate create: %v", err)
				}
				return nil
			}})
		}
	}
	// Waiters on random calls: when a call is done, every earlier call
	// must be done already.
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 32 {
		k := rand.N(len(calls))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-calls[k].done
			for j := range k {
				select {
				case <-calls[j].done:
				default:
					errs <- fmt.Errorf("call %d completed before call %d", k, j)
					return
				}
			}
		}()
	}
	select {
	case <-calls[0].done:
		t.Fatal("a call completed while the replies were held back")
	case <-time.After(50 * time.Millisecond):
	}
	resume()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, e := range calls {
		<-e.done
		if err := e.check(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentUse hammers one Conn from several goroutines (run with
// -race).
func TestConcurrentUse(t *testing.T) {
	ts := startServer(t)
	c := connect(t, []string{ts.addr})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			path := fmt.Sprintf("/g%d", g)
			if _, _, err := c.Create(ctx, path, nil, Persistent, zkproto.OpenACLUnsafe); err != nil {
				errs <- err
				return
			}
			for i := range 50 {
				if _, err := c.Set(ctx, path, []byte{byte(i)}, int32(i)); err != nil {
					errs <- fmt.Errorf("%s set %d: %w", path, i, err)
					return
				}
				if _, _, _, err := c.GetW(ctx, path); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestContextCancellation: a cancelled wait returns at once with the
// context's error, the request still completes in its turn, and the
// connection stays healthy and in order.
func TestContextCancellation(t *testing.T) {
	ts := startServer(t)
	px := newProxy(t, ts.addr)
	c := connect(t, []string{px.addr()})
	mustCreate(t, c, "/cc", "v0", Persistent)

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := c.Get(cancelled, "/cc"); !errors.Is(err, context.Canceled) {
		t.Fatalf("get with a cancelled context: %v", err)
	}

	resume := px.pause()
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	abandoned := c.SetAsync("/cc", []byte("v1"), 0)
	start := time.Now()
	if _, err := abandoned.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait: %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Fatal("the wait did not end with its context")
	}
	_, err := c.Set(short, "/cc", []byte("x"), AnyVersion)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("sync call on an expired context: %v", err)
	}
	after := c.GetAsync("/cc")
	resume()
	st, err := abandoned.Result()
	if err != nil || st.Version != 1 {
		t.Fatalf("abandoned call: %+v %v", st, err)
	}
	r, err := after.Result()
	if err != nil || string(r.Data) != "x" || r.Stat.Version != 2 {
		t.Fatalf("later call: %q %+v %v", r.Data, r.Stat, err)
	}
	if s := c.State(); s != StateConnected {
		t.Fatalf("state %v", s)
	}
	select {
	case ev := <-c.SessionEvents():
		if ev.State != StateConnected {
			t.Fatalf("session event %+v", ev)
		}
	default:
	}
}

// TestConnectContext: Connect gives up when its context ends, reporting
// why, and leaves nothing running.
func TestConnectContext(t *testing.T) {
	ln := newRefusingAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Connect(ctx, []string{ln}, WithSessionTimeout(time.Second))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "last error") {
		t.Fatalf("connect: %v", err)
	}
	waitNoClientGoroutines(t)
	if _, err := Connect(context.Background(), nil); err != ErrNoServers {
		t.Fatalf("no servers: %v", err)
	}
}
