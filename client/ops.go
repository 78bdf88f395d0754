package client

import (
	"context"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file holds the single-node operations, each as an asynchronous
// XxxAsync that queues the request and a synchronous Xxx that waits for it
// with a context. Results are read from the reply record once the call has
// completed, which the Done channel's close orders after the reader's
// writes.

// CreateResult is the result of a create: the path of the new node (with
// its sequence suffix, if sequential) and its Stat.
type CreateResult struct {
	Path string        // the new node's path, with its sequence suffix
	Stat *zkproto.Stat // the new node's Stat
}

// GetResult is the result of a getData.
type GetResult struct {
	Data []byte        // the node's data
	Stat *zkproto.Stat // the node's Stat
	// Watch is set by GetWAsync.
	Watch <-chan Event
}

// ExistsResult is the result of an exists: Stat is nil if the node does
// not exist.
type ExistsResult struct {
	Stat *zkproto.Stat // the node's Stat, nil if it does not exist
	// Watch is set by ExistsWAsync: it fires on creation if the node is
	// missing, and on change or deletion if it exists.
	Watch <-chan Event
}

// ChildrenResult is the result of a getChildren2: the children's names
// (unsorted, as the server lists them) and the parent's Stat.
type ChildrenResult struct {
	Children []string      // the children's names, unsorted
	Stat     *zkproto.Stat // the parent's Stat
	// Watch is set by ChildrenWAsync.
	Watch <-chan Event
}

// ACLResult is the result of a getACL.
type ACLResult struct {
	ACL  []zkproto.ACL // the node's ACL
	Stat *zkproto.Stat // the node's Stat
}

func statOf(s zkproto.Stat) *zkproto.Stat { return &s }

func errOnly(cl *call) (struct{}, error) { return struct{}{}, cl.err }

// CreateAsync queues a create of path with mode (any mode but the TTL
// ones, which need CreateTTLAsync).
func (c *Conn) CreateAsync(path string, data []byte, mode CreateMode, acl []zkproto.ACL) *Call[CreateResult] {
	return c.createAsync(path, data, mode, acl, 0)
}

// CreateTTLAsync queues a create of a TTL node (mode PersistentTTL or
// PersistentSequentialTTL): the server deletes it once it has had no
// children for ttl and has not been modified for ttl. Servers need
// extended types enabled, or answer UNIMPLEMENTED.
func (c *Conn) CreateTTLAsync(path string, data []byte, mode CreateMode, acl []zkproto.ACL, ttl time.Duration) *Call[CreateResult] {
	return c.createAsync(path, data, mode, acl, ttl.Milliseconds())
}

func (c *Conn) createAsync(path string, data []byte, mode CreateMode, acl []zkproto.ACL, ttlMs int64) *Call[CreateResult] {
	op, req := createRequest(path, data, mode, acl, ttlMs)
	resp := &zkproto.Create2Response{}
	cl := newCall(op, req, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (CreateResult, error) {
		if cl.err != nil {
			return CreateResult{}, cl.err
		}
		return CreateResult{Path: resp.Path, Stat: statOf(resp.Stat)}, nil
	})
}

// Create creates a node and returns its path and Stat.
func (c *Conn) Create(ctx context.Context, path string, data []byte, mode CreateMode, acl []zkproto.ACL) (string, *zkproto.Stat, error) {
	r, err := c.CreateAsync(path, data, mode, acl).Wait(ctx)
	return r.Path, r.Stat, err
}

// CreateTTL creates a TTL node (see CreateTTLAsync).
func (c *Conn) CreateTTL(ctx context.Context, path string, data []byte, mode CreateMode, acl []zkproto.ACL, ttl time.Duration) (string, *zkproto.Stat, error) {
	r, err := c.CreateTTLAsync(path, data, mode, acl, ttl).Wait(ctx)
	return r.Path, r.Stat, err
}

// DeleteAsync queues a delete of path if its version is version
// (AnyVersion: any).
func (c *Conn) DeleteAsync(path string, version int32) *Call[struct{}] {
	cl := newCall(zkproto.OpDelete, &zkproto.DeleteRequest{Path: path, Version: version}, nil)
	c.submit(cl)
	return newTyped(cl, errOnly)
}

// Delete deletes a node (see DeleteAsync).
func (c *Conn) Delete(ctx context.Context, path string, version int32) error {
	_, err := c.DeleteAsync(path, version).Wait(ctx)
	return err
}

// ExistsAsync queues an exists.
func (c *Conn) ExistsAsync(path string) *Call[ExistsResult] { return c.existsAsync(path, false) }

// ExistsWAsync queues an exists that leaves a watch.
func (c *Conn) ExistsWAsync(path string) *Call[ExistsResult] { return c.existsAsync(path, true) }

func (c *Conn) existsAsync(path string, watch bool) *Call[ExistsResult] {
	resp := &zkproto.ExistsResponse{}
	cl := newCall(zkproto.OpExists, &zkproto.ExistsRequest{Path: path, Watch: watch}, resp)
	var ch chan Event
	if watch {
		ch = newWatchChan()
		cl.onReply = func(code zkproto.Code) {
			switch code {
			case zkproto.OK:
				c.watches.addOneShot(watchData, path, ch)
			case zkproto.ErrNoNode: // the server armed it for NodeCreated
				c.watches.addOneShot(watchExist, path, ch)
			}
		}
	}
	c.submit(cl)
	return newTyped(cl, func(cl *call) (ExistsResult, error) {
		switch cl.err {
		case nil:
			return ExistsResult{Stat: statOf(resp.Stat), Watch: watchOut(ch)}, nil
		case zkproto.ErrNoNode:
			return ExistsResult{Watch: watchOut(ch)}, nil
		}
		return ExistsResult{}, cl.err
	})
}

// watchOut returns ch as a receive-only channel, keeping nil nil.
func watchOut(ch chan Event) <-chan Event {
	if ch == nil {
		return nil
	}
	return ch
}

// Exists returns the node's Stat, or nil if it does not exist.
func (c *Conn) Exists(ctx context.Context, path string) (*zkproto.Stat, error) {
	r, err := c.ExistsAsync(path).Wait(ctx)
	return r.Stat, err
}

// ExistsW is Exists plus a watch, which fires once: on the node's creation
// if it is missing, on its change or deletion if it exists.
func (c *Conn) ExistsW(ctx context.Context, path string) (*zkproto.Stat, <-chan Event, error) {
	r, err := c.ExistsWAsync(path).Wait(ctx)
	return r.Stat, r.Watch, err
}

// GetAsync queues a getData.
func (c *Conn) GetAsync(path string) *Call[GetResult] { return c.getAsync(path, false) }

// GetWAsync queues a getData that leaves a data watch.
func (c *Conn) GetWAsync(path string) *Call[GetResult] { return c.getAsync(path, true) }

func (c *Conn) getAsync(path string, watch bool) *Call[GetResult] {
	resp := &zkproto.GetDataResponse{}
	cl := newCall(zkproto.OpGetData, &zkproto.GetDataRequest{Path: path, Watch: watch}, resp)
	var ch chan Event
	if watch {
		ch = newWatchChan()
		cl.onReply = func(code zkproto.Code) {
			if code == zkproto.OK {
				c.watches.addOneShot(watchData, path, ch)
			}
		}
	}
	c.submit(cl)
	return newTyped(cl, func(cl *call) (GetResult, error) {
		if cl.err != nil {
			return GetResult{}, cl.err
		}
		return GetResult{Data: resp.Data, Stat: statOf(resp.Stat), Watch: watchOut(ch)}, nil
	})
}

// Get returns the node's data and Stat.
func (c *Conn) Get(ctx context.Context, path string) ([]byte, *zkproto.Stat, error) {
	r, err := c.GetAsync(path).Wait(ctx)
	return r.Data, r.Stat, err
}

// GetW is Get plus a watch that fires once, on the node's next change or
// deletion.
func (c *Conn) GetW(ctx context.Context, path string) ([]byte, *zkproto.Stat, <-chan Event, error) {
	r, err := c.GetWAsync(path).Wait(ctx)
	return r.Data, r.Stat, r.Watch, err
}

// SetAsync queues a setData if the node's version is version (AnyVersion:
// any); the result is the new Stat.
func (c *Conn) SetAsync(path string, data []byte, version int32) *Call[*zkproto.Stat] {
	resp := &zkproto.SetDataResponse{}
	cl := newCall(zkproto.OpSetData, &zkproto.SetDataRequest{Path: path, Data: data, Version: version}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (*zkproto.Stat, error) {
		if cl.err != nil {
			return nil, cl.err
		}
		return statOf(resp.Stat), nil
	})
}

// Set sets the node's data (see SetAsync).
func (c *Conn) Set(ctx context.Context, path string, data []byte, version int32) (*zkproto.Stat, error) {
	return c.SetAsync(path, data, version).Wait(ctx)
}

// ChildrenAsync queues a getChildren2.
func (c *Conn) ChildrenAsync(path string) *Call[ChildrenResult] { return c.childrenAsync(path, false) }

// ChildrenWAsync queues a getChildren2 that leaves a child watch.
func (c *Conn) ChildrenWAsync(path string) *Call[ChildrenResult] { return c.childrenAsync(path, true) }

func (c *Conn) childrenAsync(path string, watch bool) *Call[ChildrenResult] {
	resp := &zkproto.GetChildren2Response{}
	cl := newCall(zkproto.OpGetChildren2, &zkproto.GetChildren2Request{Path: path, Watch: watch}, resp)
	var ch chan Event
	if watch {
		ch = newWatchChan()
		cl.onReply = func(code zkproto.Code) {
			if code == zkproto.OK {
				c.watches.addOneShot(watchChild, path, ch)
			}
		}
	}
	c.submit(cl)
	return newTyped(cl, func(cl *call) (ChildrenResult, error) {
		if cl.err != nil {
			return ChildrenResult{}, cl.err
		}
		return ChildrenResult{Children: resp.Children, Stat: statOf(resp.Stat), Watch: watchOut(ch)}, nil
	})
}

// Children returns the names of the node's children and its Stat.
func (c *Conn) Children(ctx context.Context, path string) ([]string, *zkproto.Stat, error) {
	r, err := c.ChildrenAsync(path).Wait(ctx)
	return r.Children, r.Stat, err
}

// ChildrenW is Children plus a watch that fires once, when a child is
// added or removed or the node is deleted.
func (c *Conn) ChildrenW(ctx context.Context, path string) ([]string, *zkproto.Stat, <-chan Event, error) {
	r, err := c.ChildrenWAsync(path).Wait(ctx)
	return r.Children, r.Stat, r.Watch, err
}

// GetACLAsync queues a getACL.
func (c *Conn) GetACLAsync(path string) *Call[ACLResult] {
	resp := &zkproto.GetACLResponse{}
	cl := newCall(zkproto.OpGetACL, &zkproto.GetACLRequest{Path: path}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (ACLResult, error) {
		if cl.err != nil {
			return ACLResult{}, cl.err
		}
		return ACLResult{ACL: resp.ACL, Stat: statOf(resp.Stat)}, nil
	})
}

// GetACL returns the node's ACL and Stat.
func (c *Conn) GetACL(ctx context.Context, path string) ([]zkproto.ACL, *zkproto.Stat, error) {
	r, err := c.GetACLAsync(path).Wait(ctx)
	return r.ACL, r.Stat, err
}

// SetACLAsync queues a setACL if the node's ACL version (aversion) is
// version (AnyVersion: any).
func (c *Conn) SetACLAsync(path string, acl []zkproto.ACL, version int32) *Call[*zkproto.Stat] {
	resp := &zkproto.SetACLResponse{}
	cl := newCall(zkproto.OpSetACL, &zkproto.SetACLRequest{Path: path, ACL: acl, Version: version}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (*zkproto.Stat, error) {
		if cl.err != nil {
			return nil, cl.err
		}
		return statOf(resp.Stat), nil
	})
}

// SetACL sets the node's ACL (see SetACLAsync) and returns its Stat.
func (c *Conn) SetACL(ctx context.Context, path string, acl []zkproto.ACL, version int32) (*zkproto.Stat, error) {
	return c.SetACLAsync(path, acl, version).Wait(ctx)
}

// SyncAsync queues a sync: once it completes, reads on this session see
// every write the ensemble committed before the sync was processed.
func (c *Conn) SyncAsync(path string) *Call[string] {
	resp := &zkproto.SyncResponse{}
	cl := newCall(zkproto.OpSync, &zkproto.SyncRequest{Path: path}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (string, error) { return resp.Path, cl.err })
}

// Sync waits for a sync (see SyncAsync) and returns the path echoed.
func (c *Conn) Sync(ctx context.Context, path string) (string, error) {
	return c.SyncAsync(path).Wait(ctx)
}

// GetEphemeralsAsync queues a getEphemerals: the session's ephemeral nodes
// whose paths start with prefix.
func (c *Conn) GetEphemeralsAsync(prefix string) *Call[[]string] {
	resp := &zkproto.GetEphemeralsResponse{}
	cl := newCall(zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: prefix}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) ([]string, error) { return resp.Ephemerals, cl.err })
}

// GetEphemerals returns the session's ephemeral nodes under prefix.
func (c *Conn) GetEphemerals(ctx context.Context, prefix string) ([]string, error) {
	return c.GetEphemeralsAsync(prefix).Wait(ctx)
}

// GetAllChildrenNumberAsync queues a getAllChildrenNumber: the number of
// descendants of path.
func (c *Conn) GetAllChildrenNumberAsync(path string) *Call[int32] {
	resp := &zkproto.GetAllChildrenNumberResponse{}
	cl := newCall(zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: path}, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) (int32, error) { return resp.TotalNumber, cl.err })
}

// GetAllChildrenNumber returns the number of descendants of path.
func (c *Conn) GetAllChildrenNumber(ctx context.Context, path string) (int32, error) {
	return c.GetAllChildrenNumberAsync(path).Wait(ctx)
}

// WhoAmIAsync queues a whoAmI: the identities the session is
// authenticated as.
func (c *Conn) WhoAmIAsync() *Call[[]zkproto.ClientInfo] {
	resp := &zkproto.WhoAmIResponse{}
	cl := newCall(zkproto.OpWhoAmI, nil, resp)
	c.submit(cl)
	return newTyped(cl, func(cl *call) ([]zkproto.ClientInfo, error) { return resp.ClientInfo, cl.err })
}

// WhoAmI returns the identities the session is authenticated as.
func (c *Conn) WhoAmI(ctx context.Context) ([]zkproto.ClientInfo, error) {
	return c.WhoAmIAsync().Wait(ctx)
}
