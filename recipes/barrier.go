package recipes

import (
	"context"
	"errors"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Barrier is kazoo's Barrier (ZooKeeper's barrier recipe): the barrier is
// up while its node exists. Create raises it, Remove lowers it, and Wait
// blocks while it is up. A kazoo Barrier on the same path is the same
// barrier.
type Barrier struct {
	conn *client.Conn
	path string
}

// NewBarrier returns the barrier at path.
func NewBarrier(conn *client.Conn, path string) *Barrier { return &Barrier{conn: conn, path: path} }

// Create raises the barrier (creating the node and its parents); raising a
// raised barrier is not an error.
func (b *Barrier) Create(ctx context.Context) error {
	return ensurePath(ctx, b.conn, b.path, zkproto.OpenACLUnsafe)
}

// Remove lowers the barrier and reports whether it was up.
func (b *Barrier) Remove(ctx context.Context) (bool, error) {
	for {
		err := b.conn.Delete(ctx, b.path, client.AnyVersion)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, zkproto.ErrNoNode):
			return false, nil
		case isConnLoss(err):
			// A delete whose answer was lost may have happened: the next
			// try then finds no node, and the barrier is down either way.
			if err := pause(ctx, retryBackoff); err != nil {
				return false, err
			}
		default:
			return false, err
		}
	}
}

// Wait blocks until the barrier is down (its node gone) or ctx ends. Unlike
// kazoo's, it survives connection loss: it looks again once reconnected.
func (b *Barrier) Wait(ctx context.Context) error {
	for {
		st, w, err := b.conn.ExistsW(ctx, b.path)
		switch {
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
			continue
		case err != nil:
			return err
		case st == nil:
			return nil
		}
		select {
		case <-w:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
