package client

import (
	"context"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// AddWatchAsync queues an addWatch: a persistent watch on path, or on its
// whole subtree when recursive. Recursive watches report NodeCreated,
// NodeDeleted and NodeDataChanged of every node below path, never
// NodeChildrenChanged (as in ZooKeeper). The watch is re-registered after a
// reconnection with setWatches2.
func (c *Conn) AddWatchAsync(path string, recursive bool) *Call[*PersistentWatch] {
	mode := zkproto.AddWatchPersistent
	if recursive {
		mode = zkproto.AddWatchPersistentRecursive
	}
	w := &PersistentWatch{c: c, path: path, recursive: recursive}
	// The reply body is an ErrorResponse{0}; there is nothing in it.
	cl := newCall(zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: path, Mode: mode}, nil)
	cl.onReply = func(code zkproto.Code) {
		if code == zkproto.OK {
			w.p = newPump[Event](c)
			c.watches.addPersistent(w)
		}
	}
	c.submit(cl)
	return newTyped(cl, func(cl *call) (*PersistentWatch, error) {
		if cl.err != nil {
			return nil, cl.err
		}
		return w, nil
	})
}

// AddWatch sets a persistent watch (see AddWatchAsync).
func (c *Conn) AddWatch(ctx context.Context, path string, recursive bool) (*PersistentWatch, error) {
	return c.AddWatchAsync(path, recursive).Wait(ctx)
}

// RemoveWatchesAsync queues a removeWatches of the session's watches of
// type typ on path. On success the client's watchers of that type end
// with a DataWatchRemoved, ChildWatchRemoved or PersistentWatchRemoved
// event. The server answers NOWATCHER if it holds no such watch.
func (c *Conn) RemoveWatchesAsync(path string, typ zkproto.WatcherType) *Call[struct{}] {
	cl := newCall(zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: path, Type: typ}, nil)
	cl.onReply = func(code zkproto.Code) {
		if code == zkproto.OK {
			c.watches.removed(path, typ)
		}
	}
	c.submit(cl)
	return newTyped(cl, errOnly)
}

// RemoveWatches removes watches (see RemoveWatchesAsync).
func (c *Conn) RemoveWatches(ctx context.Context, path string, typ zkproto.WatcherType) error {
	_, err := c.RemoveWatchesAsync(path, typ).Wait(ctx)
	return err
}
