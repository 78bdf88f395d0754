package recipes

import (
	"context"
	"errors"
	"slices"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// SharedConfig is a configuration of several values published by one writer
// and read whole by many, with the ZooKeeper paper's "ready" znode pattern
// (§2.3): readers never see a mix of two publications, and the writer
// updates the values without a multi, as pipelined asynchronous writes.
//
// Layout: each value is a persistent child <path>/<key>; the child
// <path>/ready exists while the configuration is complete. Publish deletes
// ready, writes the values, and creates ready again, all pipelined: the
// session's FIFO order applies them in that order. Read waits for ready,
// reads the values with a watch on ready set first, and starts again if
// the watch fired meanwhile: ZooKeeper delivers a watch notification
// before any read result that reflects the change, so a read that
// completes with the watch unfired saw one complete publication. (kazoo and
// Curator have no recipe for it; this layout is the paper's.)
type SharedConfig struct {
	conn *client.Conn
	path string
}

// configReady is the child that marks a complete configuration.
const configReady = "ready"

// ErrReservedKey reports a key that would be the ready marker itself.
var ErrReservedKey = errors.New(`recipes: "ready" is the marker of a SharedConfig, not a key`)

// NewSharedConfig returns the configuration at path.
func NewSharedConfig(conn *client.Conn, path string) *SharedConfig {
	return &SharedConfig{conn: conn, path: path}
}

// Publish replaces the configuration by values (keys are node names):
// keys not in values are removed. If it fails midway, ready stays absent
// and readers wait for the next Publish: they never see a partial one.
func (c *SharedConfig) Publish(ctx context.Context, values map[string][]byte) error {
	if _, ok := values[configReady]; ok {
		return ErrReservedKey
	}
	if err := ensurePath(ctx, c.conn, c.path, zkproto.OpenACLUnsafe); err != nil {
		return err
	}
	old, _, err := c.conn.Children(ctx, c.path)
	if err != nil {
		return err
	}
	var calls []pendingWrite
	ready := joinPath(c.path, configReady)
	calls = append(calls, ignore(c.conn.DeleteAsync(ready, client.AnyVersion), zkproto.ErrNoNode))
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		p := joinPath(c.path, k)
		if slices.Contains(old, k) {
			calls = append(calls, ignore(c.conn.SetAsync(p, values[k], client.AnyVersion)))
		} else {
			calls = append(calls, ignore(c.conn.CreateAsync(p, values[k], client.Persistent, zkproto.OpenACLUnsafe)))
		}
	}
	for _, k := range old {
		if _, keep := values[k]; !keep && k != configReady {
			calls = append(calls, ignore(c.conn.DeleteAsync(joinPath(c.path, k), client.AnyVersion), zkproto.ErrNoNode))
		}
	}
	calls = append(calls, ignore(c.conn.CreateAsync(ready, nil, client.Persistent, zkproto.OpenACLUnsafe)))
	for _, call := range calls {
		if err := call.Wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// pendingWrite is a pipelined write of Publish.
type pendingWrite interface{ Wait(context.Context) error }

// waiter adapts a pipelined call to an error-only Wait that ignores the
// given codes.
type waiter[T any] struct {
	call   *client.Call[T]
	ignore []error
}

func (w waiter[T]) Wait(ctx context.Context) error {
	_, err := w.call.Wait(ctx)
	for _, e := range w.ignore {
		if errors.Is(err, e) {
			return nil
		}
	}
	return err
}

func ignore[T any](call *client.Call[T], codes ...error) waiter[T] {
	return waiter[T]{call: call, ignore: codes}
}

// Read waits until a configuration is published and returns it whole.
func (c *SharedConfig) Read(ctx context.Context) (map[string][]byte, error) {
	values, _, err := c.Watch(ctx)
	return values, err
}

// Watch is Read that also returns a channel which fires when the next
// Publish begins (the deletion of ready): the caller reads again then.
func (c *SharedConfig) Watch(ctx context.Context) (map[string][]byte, <-chan client.Event, error) {
	ready := joinPath(c.path, configReady)
	for {
		st, w, err := c.conn.ExistsW(ctx, ready)
		if err != nil {
			return nil, nil, err
		}
		if st == nil {
			if err := waitEvent(ctx, w); err != nil {
				return nil, nil, err
			}
			continue
		}
		values, err := c.readValues(ctx)
		if err != nil {
			return nil, nil, err
		}
		select {
		case <-w:
			continue // a Publish began while we read
		default:
			return values, w, nil
		}
	}
}

// readValues reads every key, pipelined.
func (c *SharedConfig) readValues(ctx context.Context) (map[string][]byte, error) {
	kids, _, err := c.conn.Children(ctx, c.path)
	if err != nil {
		return nil, err
	}
	calls := map[string]*client.Call[client.GetResult]{}
	for _, k := range kids {
		if k != configReady {
			calls[k] = c.conn.GetAsync(joinPath(c.path, k))
		}
	}
	values := map[string][]byte{}
	for k, call := range calls {
		r, err := call.Wait(ctx)
		if errors.Is(err, zkproto.ErrNoNode) {
			continue // removed by a Publish: its watch has fired
		}
		if err != nil {
			return nil, err
		}
		values[k] = r.Data
	}
	return values, nil
}
