package client

import (
	"context"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// authCall builds an AuthPacket request; it travels with xid -4, as the
// Java client sends it, because ZooKeeper answers auth as soon as it reads
// it, possibly before earlier requests, and the special xid is how the
// reply is told apart.
func authCall(a authInfo) *call {
	cl := newCall(zkproto.OpAuth, &zkproto.AuthPacket{Scheme: a.scheme, Auth: a.auth}, nil)
	cl.setXid(zkproto.XidAuth)
	return cl
}

// AddAuthAsync queues credentials for the session (e.g. scheme "digest",
// auth "user:password"). They are remembered and sent again on every
// reconnection, as ZooKeeper's client does, from the moment they are
// queued. A server that rejects them closes the connection, and the Conn
// ends in StateAuthFailed: every call then fails with ErrAuthFailed.
func (c *Conn) AddAuthAsync(scheme string, auth []byte) *Call[struct{}] {
	a := authInfo{scheme: scheme, auth: append([]byte(nil), auth...)}
	cl := authCall(a)
	c.mu.Lock()
	if c.terminal == nil && !c.closing {
		c.auths = append(c.auths, a)
	}
	c.submitLocked(cl)
	c.mu.Unlock()
	return newTyped(cl, errOnly)
}

// AddAuth adds credentials to the session (see AddAuthAsync).
func (c *Conn) AddAuth(ctx context.Context, scheme string, auth []byte) error {
	_, err := c.AddAuthAsync(scheme, auth).Wait(ctx)
	return err
}
