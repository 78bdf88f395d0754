package client

import (
	"context"
)

// Call is an operation submitted without waiting for its reply. Calls of
// one Conn complete in the order they were submitted: when Done of a call
// is closed, Done of every call submitted before it is closed too. That is
// ZooKeeper's FIFO client order, kept at the API.
//
// Why a Call with a Done channel rather than callbacks: a channel lets the
// caller wait on a call, a context and anything else in one select, costs
// no goroutine, and runs no user code on the connection's reader goroutine,
// where a slow callback would delay every reply and ping of the session.
// Completing calls in order is cheap because replies arrive in order.
type Call[T any] struct {
	c   *call
	get func(*call) (T, error)
}

// newTyped wraps an internal call with the function that reads its result.
func newTyped[T any](c *call, get func(*call) (T, error)) *Call[T] {
	return &Call[T]{c: c, get: get}
}

// Done is closed when the call has completed.
func (f *Call[T]) Done() <-chan struct{} { return f.c.done }

// Result waits for the call to complete and returns its result.
func (f *Call[T]) Result() (T, error) {
	<-f.c.done
	return f.get(f.c)
}

// Err waits for the call to complete and returns its error.
func (f *Call[T]) Err() error {
	_, err := f.Result()
	return err
}

// Wait waits for the call or for ctx, whichever is first. When ctx ends
// first it returns ctx's error; the request itself is not withdrawn (it may
// already be on the wire), so its effect on the server is unknown, and the
// Conn goes on to consume its reply in order.
func (f *Call[T]) Wait(ctx context.Context) (T, error) {
	select {
	case <-f.c.done:
		return f.get(f.c)
	default:
	}
	select {
	case <-f.c.done:
		return f.get(f.c)
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
