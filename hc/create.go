package hc

import (
	"context"
	"errors"
	"fmt"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/internal/workers"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// CreateDomain creates domain p in its parent domain, which must exist;
// the new domain's locks go where the parent's do until the daemon maps
// it elsewhere.
func (c *Client) CreateDomain(ctx context.Context, p string) error {
	if err := layout.CheckPath(p); err != nil {
		return err
	}
	for {
		parent, version, err := c.readDomain(ctx, layout.Domain(p))
		if err != nil {
			return err
		}
		rec := layout.Node{Kind: layout.KindDomain, Cluster: parent.Cluster}
		// Conditioned on the parent's version, so that a domain created
		// while its parent is remapped follows the parent.
		_, err = c.master.Multi(ctx, client.CheckOp(layout.NamePath(layout.Domain(p)), version),
			client.CreateOp(layout.NamePath(p), layout.Marshal(rec), client.Persistent, zkproto.OpenACLUnsafe))
		switch {
		case err == nil:
			return nil
		case errors.Is(err, zkproto.ErrNodeExists):
			return fmt.Errorf("%w: %s", ErrExists, p)
		case errors.Is(err, zkproto.ErrBadVersion), errors.Is(err, zkproto.ErrNoNode), isConnLoss(err):
			// A remap, or a reply lost: read again (a create that was
			// applied then answers NODEEXISTS, which a caller retrying
			// after a connection loss must expect of any create).
			if err := sleep(ctx, retryPause); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// readDomain reads the record of domain d.
func (c *Client) readDomain(ctx context.Context, d string) (layout.Node, int32, error) {
	for {
		data, st, err := c.master.Get(ctx, layout.NamePath(d))
		switch {
		case errors.Is(err, zkproto.ErrNoNode):
			return layout.Node{}, 0, fmt.Errorf("%w: %s", ErrNoDomain, d)
		case isConnLoss(err):
			if err := sleep(ctx, retryPause); err != nil {
				return layout.Node{}, 0, err
			}
			continue
		case err != nil:
			return layout.Node{}, 0, err
		}
		var rec layout.Node
		if err := layout.Unmarshal(data, &rec); err != nil {
			return layout.Node{}, 0, err
		}
		if rec.Kind != layout.KindDomain {
			return layout.Node{}, 0, fmt.Errorf("%w: %s is a lock", ErrNoDomain, d)
		}
		if rec.Cluster == "" {
			return layout.Node{}, 0, ErrNoCluster
		}
		return rec, st.Version, nil
	}
}

// CreateLock creates lock p on its domain's worker ensemble.
//
// The placement is decided once, in the master, by one multi conditioned
// on the domain record's version: the lock's record (Creating, on the
// domain's worker) and its entry in that worker's lock count appear
// together or not at all, and a second creator, or one racing a remap of
// the domain, fails instead of placing the lock elsewhere. The worker copy
// is created next and the record marked created; whoever finds the record
// still Creating (this call, a client locating the lock) finishes those
// two idempotent steps.
func (c *Client) CreateLock(ctx context.Context, p string) error {
	if err := layout.CheckPath(p); err != nil {
		return err
	}
	retried := false
	for {
		dom, version, err := c.readDomain(ctx, layout.Domain(p))
		if err != nil {
			return err
		}
		rec := layout.Node{Kind: layout.KindLock, Cluster: dom.Cluster, Placement: 1, Creating: true}
		_, err = c.master.Multi(ctx, client.CheckOp(layout.NamePath(layout.Domain(p)), version),
			client.CreateOp(layout.NamePath(p), layout.Marshal(rec), client.Persistent, zkproto.OpenACLUnsafe),
			client.CreateOp(layout.PlacementEntry(dom.Cluster, p), nil, client.Persistent, zkproto.OpenACLUnsafe))
		switch {
		case err == nil:
			_, err := c.locate(ctx, p, true) // finishes the creation
			return err
		case errors.Is(err, zkproto.ErrNodeExists) && retried:
			// Our multi may have been applied before the connection
			// broke: finish the creation if it is still pending.
			_, err := c.locate(ctx, p, true)
			return err
		case errors.Is(err, zkproto.ErrNodeExists):
			return fmt.Errorf("%w: %s", ErrExists, p)
		case errors.Is(err, zkproto.ErrBadVersion), errors.Is(err, zkproto.ErrNoNode):
		case isConnLoss(err):
			retried = true
		default:
			return err
		}
		if err := sleep(ctx, retryPause); err != nil {
			return err
		}
	}
}

// finishCreate completes the creation of lock p whose master record (at
// version) is still Creating.
func (c *Client) finishCreate(ctx context.Context, p string, rec layout.Node, version int32) error {
	return workers.FinishCreate(ctx, c.master, c.pool, p, rec, version)
}
