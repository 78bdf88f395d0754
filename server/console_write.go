package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// consoleWrite makes one change of the web console as a ZooKeeper client
// of this server would: over an in-process connection it opens a session,
// sends the one request and closes the session, so the change is ordered
// through the log and checked (versions, ACLs, the server's own refusals)
// exactly as an unauthenticated client's. It speaks the wire protocol
// itself because package client's tests run this package's servers.
func (s *Server) consoleWrite(ctx context.Context, method string, ch console.Change) error {
	var op zkproto.OpCode
	var req zkproto.Record
	switch method {
	case http.MethodPost:
		op, req = zkproto.OpCreate, &zkproto.CreateRequest{Path: ch.Path, Data: ch.Data, ACL: zkproto.OpenACLUnsafe}
	case http.MethodPut:
		op, req = zkproto.OpSetData, &zkproto.SetDataRequest{Path: ch.Path, Data: ch.Data, Version: ch.Version}
	default:
		op, req = zkproto.OpDelete, &zkproto.DeleteRequest{Path: ch.Path, Version: ch.Version}
	}
	local, remote := net.Pipe()
	defer local.Close()
	s.ServeConn(remote)
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(10 * time.Second)
	}
	local.SetDeadline(deadline)
	c := wireCall{nc: local, br: bufio.NewReader(local)}
	hello := &zkproto.ConnectRequest{TimeOut: 10_000, Passwd: make([]byte, 16)}
	if err := c.send(func(e *zkproto.Encoder) { hello.Encode(e) }); err != nil {
		return err
	}
	if _, err := c.receive(); err != nil {
		return fmt.Errorf("opening a session: %w (this server may not serve now)", err)
	}
	h, err := c.call(1, op, req)
	if err != nil {
		return err
	}
	c.call(2, zkproto.OpCloseSession, nil)
	if h.Err != zkproto.OK {
		return h.Err
	}
	return nil
}

// wireCall is one in-process ZooKeeper connection, used synchronously.
type wireCall struct {
	nc net.Conn
	br *bufio.Reader
}

// send writes one length-prefixed frame whose body fill writes.
func (c wireCall) send(fill func(e *zkproto.Encoder)) error {
	e := zkproto.NewEncoder([]byte{0, 0, 0, 0})
	fill(e)
	b := e.Bytes()
	n := len(b) - 4
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	_, err := c.nc.Write(b)
	return err
}

func (c wireCall) receive() ([]byte, error) { return zkproto.ReadFrame(c.br, nil, 1<<20) }

// call sends request req of op with xid and returns its reply's header,
// skipping watch notifications (the session sets no watch).
func (c wireCall) call(xid zkproto.Xid, op zkproto.OpCode, req zkproto.Record) (zkproto.ReplyHeader, error) {
	var h zkproto.ReplyHeader
	err := c.send(func(e *zkproto.Encoder) {
		(&zkproto.RequestHeader{Xid: xid, Op: op}).Encode(e)
		if req != nil {
			req.Encode(e)
		}
	})
	for err == nil {
		var frame []byte
		if frame, err = c.receive(); err != nil {
			break
		}
		if err = h.Decode(zkproto.NewDecoder(frame)); err == nil && h.Xid == xid {
			return h, nil
		}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, io.ErrClosedPipe) {
		return h, fmt.Errorf("%s: no answer in time (the change may still be made): %w", op, err)
	}
	return h, err
}
