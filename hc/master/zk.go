package master

import (
	"context"
	"errors"
	"time"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// retryPause is the pause before retrying after a connection loss.
const retryPause = 10 * time.Millisecond

func isConnLoss(err error) bool { return errors.Is(err, zkproto.ErrConnectionLoss) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// syncRead makes the session's later reads at least as new as everything
// its ensemble had applied when it was called, through connection losses
// (a missing path is no error). The master's state is written through
// many sessions (clients, daemons, tools), and a step resumed by another
// daemon must read what the previous one wrote on a worker, even through
// a server that lags.
func syncRead(ctx context.Context, conn *client.Conn, path string) error {
	for {
		_, err := conn.Sync(ctx, path)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNoNode):
			return nil
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// getRecord reads the JSON record at path into v, through connection
// losses; a missing node is zkproto.ErrNoNode.
func getRecord(ctx context.Context, conn *client.Conn, path string, v any) (*zkproto.Stat, error) {
	for {
		data, st, err := conn.Get(ctx, path)
		if isConnLoss(err) {
			if err := sleep(ctx, retryPause); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return st, layout.Unmarshal(data, v)
	}
}

// children lists path's children through connection losses; a missing
// node has none.
func children(ctx context.Context, conn *client.Conn, path string) ([]string, error) {
	for {
		kids, _, err := conn.Children(ctx, path)
		switch {
		case errors.Is(err, zkproto.ErrNoNode):
			return nil, nil
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return nil, err
			}
			continue
		}
		return kids, err
	}
}

// create makes a persistent node unless it exists, through connection
// losses.
func create(ctx context.Context, conn *client.Conn, path string, data []byte) error {
	for {
		_, _, err := conn.Create(ctx, path, data, client.Persistent, zkproto.OpenACLUnsafe)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNodeExists):
			return nil
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return err
			}
			continue
		}
		return err
	}
}

// lockRecords reads the master records of locks, pipelined; a lock whose
// record is missing is left out.
func lockRecords(ctx context.Context, conn *client.Conn, locks []string) (map[string]record, error) {
	calls := make([]*client.Call[client.GetResult], len(locks))
	for i, l := range locks {
		calls[i] = conn.GetAsync(layout.NamePath(l))
	}
	out := make(map[string]record, len(locks))
	for i, call := range calls {
		r, err := call.Wait(ctx)
		if errors.Is(err, zkproto.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var n layout.Node
		if err := layout.Unmarshal(r.Data, &n); err != nil {
			return nil, err
		}
		out[locks[i]] = record{Node: n, version: r.Stat.Version}
	}
	return out, nil
}

// record is a master record with the version it was read at.
type record struct {
	layout.Node
	version int32
}

// decodeNames decodes encoded lock names (children of a placement or
// moves directory).
func decodeNames(names []string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		p, err := layout.Decode(n)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}
