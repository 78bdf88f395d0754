package master

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/hc/layout"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// ErrRegistered is returned by Register for a cluster id already in the
// registry.
var ErrRegistered = errors.New("hc: cluster already registered")

// Init creates the master ensemble's layout (idempotent): the
// directories and the root domain, which has no worker until the first
// active one is registered.
func Init(ctx context.Context, conn *client.Conn) error {
	root := layout.Marshal(layout.Node{Kind: layout.KindDomain})
	for _, n := range []struct {
		path string
		data []byte
	}{{layout.Root, nil}, {layout.ClustersDir, nil}, {layout.PlacementDir, nil},
		{layout.NamesRoot, root}, {layout.MovesDir, nil}, {layout.DaemonDir, nil}} {
		if err := create(ctx, conn, n.path, n.data); err != nil {
			return fmt.Errorf("hc init: %s: %w", n.path, err)
		}
	}
	return nil
}

// Register adds worker ensemble cid (connect string connect) to the
// registry in the given state, after creating the worker's directory of
// locks on it. The first active worker registered becomes the root
// domain's, so that locks can be created.
func Register(ctx context.Context, conn *client.Conn, cid, connect string, state layout.ClusterState) error {
	if err := layout.CheckClusterID(cid); err != nil {
		return err
	}
	if state != layout.Active && state != layout.Standby {
		return fmt.Errorf("hc: cluster state must be active or standby, got %q", state)
	}
	w, err := client.Connect(ctx, strings.Split(connect, ","))
	if err != nil {
		return fmt.Errorf("hc: worker %s: %w", cid, err)
	}
	for _, dir := range []string{layout.Root, layout.LocksDir} {
		if err := create(ctx, w, dir, nil); err != nil {
			w.Close()
			return fmt.Errorf("hc: worker %s: %w", cid, err)
		}
	}
	w.Close()
	rec := layout.Cluster{Connect: connect, State: state}
	_, err = conn.Multi(ctx, client.CreateOp(layout.ClusterPath(cid), layout.Marshal(rec), client.Persistent, zkproto.OpenACLUnsafe),
		client.CreateOp(layout.PlacementPath(cid), nil, client.Persistent, zkproto.OpenACLUnsafe))
	switch {
	case errors.Is(err, zkproto.ErrNodeExists):
		return fmt.Errorf("%w: %s", ErrRegistered, cid)
	case errors.Is(err, zkproto.ErrNoNode):
		return fmt.Errorf("hc: the master has no layout (run init first): %w", err)
	case err != nil:
		return err
	}
	if state != layout.Active {
		return nil
	}
	for {
		var root layout.Node
		st, err := getRecord(ctx, conn, layout.NamesRoot, &root)
		if err != nil || root.Cluster != "" {
			return err
		}
		root.Cluster = cid
		_, err = conn.Set(ctx, layout.NamesRoot, layout.Marshal(root), st.Version)
		if err == nil {
			return nil
		}
		if !errors.Is(err, zkproto.ErrBadVersion) && !isConnLoss(err) {
			return err
		}
	}
}

// clusters reads the registry: id → record and version.
func clusters(ctx context.Context, conn *client.Conn) (map[string]clusterRecord, error) {
	ids, err := children(ctx, conn, layout.ClustersDir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]clusterRecord, len(ids))
	for _, id := range ids {
		var rec layout.Cluster
		st, err := getRecord(ctx, conn, layout.ClusterPath(id), &rec)
		if errors.Is(err, zkproto.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out[id] = clusterRecord{Cluster: rec, version: st.Version}
	}
	return out, nil
}

type clusterRecord struct {
	layout.Cluster
	version int32
}
