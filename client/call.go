package client

import (
	"encoding/binary"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// call is one request in the Conn's FIFO. It is created by a submitting
// goroutine, owned by the Conn's queues under Conn.mu from then on, and
// completed exactly once, in submission order (see Conn.flushReadyLocked).
type call struct {
	op zkproto.OpCode
	// xid is the special xid of an auth or setWatches request, or 0 for an
	// ordinary request, which gets the next xid when it is written.
	xid zkproto.Xid
	// frame is the whole request frame; an ordinary request's xid is
	// patched into bytes 4..8 when it is written.
	frame []byte
	// resp receives the reply body when the reply is OK (nil: no body).
	resp zkproto.Record
	// onReply runs on the reader goroutine, under Conn.mu, when the reply
	// arrives and before the next frame is read, so that a watch is
	// registered before any notification that follows the reply.
	onReply func(code zkproto.Code)
	// internal calls (priming auths and setWatches) have no waiter.
	internal bool

	// Result, set under Conn.mu before done is closed.
	ready bool
	err   error
	done  chan struct{}
}

// newCall encodes a request. The frame is built here, by the submitting
// goroutine, so that the writer only concatenates bytes.
func newCall(op zkproto.OpCode, req, resp zkproto.Record) *call {
	return &call{
		op:    op,
		frame: zkproto.EncodeRequest(nil, zkproto.RequestHeader{Op: op}, req),
		resp:  resp,
		done:  make(chan struct{}),
	}
}

// setXid writes an ordinary request's xid into its frame.
func (c *call) setXid(x zkproto.Xid) {
	c.xid = x
	binary.BigEndian.PutUint32(c.frame[4:8], uint32(x))
}

// finish records the result (the first one wins); err is nil on success.
func (c *call) finish(err error) {
	if !c.ready {
		c.ready, c.err = true, err
	}
}

// complete publishes the result; the caller holds Conn.mu and has popped
// c from the head of the FIFO.
func (c *call) complete() {
	if c.done != nil {
		close(c.done)
	}
}
