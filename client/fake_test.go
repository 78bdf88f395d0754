package client

import (
	"bufio"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// fakeServer is a scripted ZooKeeper server for the protocol corners a
// real server never produces: each accepted connection is served by the
// next handler.
type fakeServer struct {
	ln       net.Listener
	mu       sync.Mutex
	handlers []func(fc *fakeConn)
	wg       sync.WaitGroup
}

type fakeConn struct {
	t   *testing.T
	nc  net.Conn
	br  *bufio.Reader
	req zkproto.ConnectRequest
}

func newFakeServer(t *testing.T, handlers ...func(fc *fakeConn)) *fakeServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fs := &fakeServer{ln: ln, handlers: handlers}
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			fs.mu.Lock()
			var h func(*fakeConn)
			if len(fs.handlers) > 0 {
				h, fs.handlers = fs.handlers[0], fs.handlers[1:]
			}
			fs.mu.Unlock()
			if h == nil {
				nc.Close()
				continue
			}
			fs.wg.Add(1)
			go func() {
				defer fs.wg.Done()
				defer nc.Close()
				fc := &fakeConn{t: t, nc: nc, br: bufio.NewReader(nc)}
				nc.SetDeadline(time.Now().Add(10 * time.Second))
				frame, err := zkproto.ReadFrame(fc.br, nil, 1<<20)
				if err != nil || fc.req.Decode(zkproto.NewDecoder(frame)) != nil {
					return
				}
				h(fc)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); fs.wg.Wait() })
	return fs
}

func (fs *fakeServer) addr() string { return fs.ln.Addr().String() }

// accept answers the handshake; withRO adds the optional readOnly byte.
func (fc *fakeConn) accept(sessionID int64, timeoutMs int32, withRO, readOnly bool) {
	resp := &zkproto.ConnectResponse{TimeOut: timeoutMs, SessionID: sessionID, Passwd: []byte("0123456789abcdef"),
		ReadOnly: readOnly, HasReadOnly: withRO}
	fc.nc.Write(zkproto.AppendFrame(nil, resp))
}

// next reads one request header and returns its body's decoder.
func (fc *fakeConn) next() (zkproto.RequestHeader, *zkproto.Decoder, bool) {
	var h zkproto.RequestHeader
	for {
		frame, err := zkproto.ReadFrame(fc.br, nil, 1<<20)
		if err != nil {
			return h, nil, false
		}
		d := zkproto.NewDecoder(frame)
		if h.Decode(d) != nil {
			return h, nil, false
		}
		if h.Op == zkproto.OpPing {
			fc.reply(zkproto.XidPing, 0, zkproto.OK, nil)
			continue
		}
		return h, d, true
	}
}

func (fc *fakeConn) reply(xid zkproto.Xid, zxid int64, code zkproto.Code, body zkproto.Record) {
	fc.nc.Write(zkproto.EncodeReply(nil, zkproto.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body))
}

// TestHandshakeForms: a response without the readOnly byte (an older
// server) is accepted; a read-only server puts the session in
// ConnectedReadOnly; the request always carries the byte.
func TestHandshakeForms(t *testing.T) {
	for _, tc := range []struct {
		name       string
		withRO, ro bool
		canBeRO    bool
		want       State
		wantReqRO  bool
	}{
		{"old server", false, false, false, StateConnected, false},
		{"3.9 server", true, false, false, StateConnected, false},
		{"read-only server", true, true, true, StateConnectedReadOnly, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan zkproto.ConnectRequest, 1)
			fs := newFakeServer(t, func(fc *fakeConn) {
				got <- fc.req
				fc.accept(0x55, 4000, tc.withRO, tc.ro)
				h, _, ok := fc.next()
				if ok {
					fc.reply(h.Xid, 9, zkproto.OK, &zkproto.GetDataResponse{Data: []byte("d")})
				}
				fc.next()
			})
			opts := []Option{WithSessionTimeout(6 * time.Second)}
			if tc.canBeRO {
				opts = append(opts, WithCanBeReadOnly())
			}
			c := connect(t, []string{fs.addr()}, opts...)
			req := <-got
			if !req.HasReadOnly || req.ReadOnly != tc.wantReqRO || req.TimeOut != 6000 || req.SessionID != 0 || len(req.Passwd) != 16 {
				t.Fatalf("ConnectRequest %+v", req)
			}
			if c.State() != tc.want || c.SessionID() != 0x55 || c.SessionTimeout() != 4*time.Second {
				t.Fatalf("state %v session %x timeout %v", c.State(), c.SessionID(), c.SessionTimeout())
			}
			if d, _, err := c.Get(ctxT(t), "/x"); err != nil || string(d) != "d" || c.LastZxid() != 9 {
				t.Fatalf("get: %q %v lastZxid %d", d, err, c.LastZxid())
			}
		})
	}
}

// TestOutOfOrderReplyDropsConnection: a reply whose xid is not the oldest
// outstanding one breaks the stream; the client drops the connection,
// fails the requests with CONNECTIONLOSS, and resumes the session on the
// next connection with its id, password and last zxid.
func TestOutOfOrderReplyDropsConnection(t *testing.T) {
	second := make(chan zkproto.ConnectRequest, 1)
	fs := newFakeServer(t,
		func(fc *fakeConn) {
			fc.accept(0x77, 4000, true, false)
			h1, _, _ := fc.next()
			fc.reply(h1.Xid, 100, zkproto.OK, &zkproto.SyncResponse{Path: "/"})
			h2, _, _ := fc.next()
			fc.next()
			fc.reply(h2.Xid+1, 101, zkproto.OK, &zkproto.SyncResponse{Path: "/"})
			fc.next() // until the client hangs up
		},
		func(fc *fakeConn) {
			second <- fc.req
			fc.accept(0x77, 4000, true, false)
			fc.next()
		})
	c := connect(t, []string{fs.addr()})
	ctx := ctxT(t)
	if _, err := c.Sync(ctx, "/"); err != nil {
		t.Fatal(err)
	}
	a, b := c.SyncAsync("/"), c.SyncAsync("/")
	if err := a.Err(); err != zkproto.ErrConnectionLoss {
		t.Fatalf("first: %v", err)
	}
	if err := b.Err(); err != zkproto.ErrConnectionLoss {
		t.Fatalf("second: %v", err)
	}
	req := <-second
	if req.SessionID != 0x77 || string(req.Passwd) != "0123456789abcdef" || req.LastZxidSeen != 100 {
		t.Fatalf("reconnect request %+v", req)
	}
}

// TestMalformedReplyBody: a reply body that does not decode fails its call
// with MARSHALLINGERROR; the frame boundary is intact, so the connection
// and later calls carry on.
func TestMalformedReplyBody(t *testing.T) {
	fs := newFakeServer(t, func(fc *fakeConn) {
		fc.accept(0x1, 4000, true, false)
		h, _, _ := fc.next()
		fc.nc.Write(zkproto.EncodeReply(nil, zkproto.ReplyHeader{Xid: h.Xid, Zxid: 1}, &zkproto.ErrorResponse{}))
		h, _, _ = fc.next()
		fc.reply(h.Xid, 2, zkproto.OK, &zkproto.GetDataResponse{Data: []byte("ok")})
		fc.next()
	})
	c := connect(t, []string{fs.addr()})
	ctx := ctxT(t)
	if _, _, err := c.Get(ctx, "/a"); err != zkproto.ErrMarshallingError {
		t.Fatalf("truncated body: %v", err)
	}
	if d, _, err := c.Get(ctx, "/b"); err != nil || string(d) != "ok" {
		t.Fatalf("next call: %q %v", d, err)
	}
}

// TestExpiredHandshake: a server that answers the resumption with
// timeOut 0 ends the session.
func TestExpiredHandshake(t *testing.T) {
	fs := newFakeServer(t,
		func(fc *fakeConn) { fc.accept(0x9, 4000, true, false) }, // then hangs up
		func(fc *fakeConn) { fc.accept(0, 0, true, false) })
	c := connect(t, []string{fs.addr()})
	waitState(t, c, StateExpired)
	if _, err := c.Sync(ctxT(t), "/"); err != zkproto.ErrSessionExpired {
		t.Fatalf("after expiry: %v", err)
	}
}
