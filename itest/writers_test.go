package itest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// writers creates znodes under a parent, one create at a time through each
// of its connections, until stopped or a create fails: the load of the
// fault tests, whose clients must see no error.
type writers struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	counts []int // creates acknowledged, per connection
	errs   []error
}

// startWriters starts one writer per connection; on[i] is the server
// conns[i] is connected to, for the error messages. Each create may take
// up to timeout.
func startWriters(ctx context.Context, conns []*client.Conn, on []members.ID, parent string, timeout time.Duration) *writers {
	w := &writers{stop: make(chan struct{}), counts: make([]int, len(conns))}
	for i, cl := range conns {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for n := 0; ; n++ {
				select {
				case <-w.stop:
					return
				default:
				}
				wctx, wcancel := context.WithTimeout(ctx, timeout)
				_, _, err := cl.Create(wctx, fmt.Sprintf("%s/c%d-%d", parent, i, n), nil, client.Persistent, zkproto.OpenACLUnsafe)
				wcancel()
				w.mu.Lock()
				if err != nil {
					w.errs = append(w.errs, fmt.Errorf("client on server %d, write %d: %w", on[i], n, err))
				} else {
					w.counts[i]++
				}
				w.mu.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	return w
}

// Stop stops the writers and returns how many creates were acknowledged
// in all and the errors that stopped writers early.
func (w *writers) Stop() (acked int, errs []error) {
	close(w.stop)
	w.wg.Wait()
	for _, n := range w.counts {
		acked += n
	}
	return acked, w.errs
}
