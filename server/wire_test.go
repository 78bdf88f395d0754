package server_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/itest"
	"github.com/giraffe-coord/giraffe/server"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// dialRaw opens a raw protocol session.
func dialRaw(t *testing.T, s *server.Server) *itest.Raw {
	t.Helper()
	r, err := itest.DialRaw(s.Addr().String(), 10000, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// call sends a request and requires the given error code.
func call(t *testing.T, r *itest.Raw, op zkproto.OpCode, req, resp zkproto.Record, want zkproto.Code) {
	t.Helper()
	h, err := r.Call(op, req, resp)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	if h.Err != want {
		t.Fatalf("%s: got %v, want %v", op, h.Err, want)
	}
}

// TestOpcodesWithoutGoClientSupport covers the opcodes go-zookeeper cannot
// send: addWatch, whoAmI, getEphemerals, getAllChildrenNumber,
// check/removeWatches, multiRead, sasl, reconfig.
func TestOpcodesWithoutGoClientSupport(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	open := zkproto.OpenACLUnsafe
	call(t, a, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/p", ACL: open}, nil, zkproto.OK)
	call(t, a, zkproto.OpAddWatch, &zkproto.AddWatchRequest{Path: "/p", Mode: zkproto.AddWatchPersistentRecursive}, &zkproto.ErrorResponse{}, zkproto.OK)
	call(t, b, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/p/x", ACL: open, Flags: zkproto.ModeEphemeral}, nil, zkproto.OK)
	call(t, b, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/p/x", Data: []byte("1"), Version: -1}, &zkproto.SetDataResponse{}, zkproto.OK)
	for _, want := range []zkproto.EventType{zkproto.EventNodeCreated, zkproto.EventNodeDataChanged} {
		ev, err := a.WaitEvent(5 * time.Second)
		if err != nil || ev.Type != want || ev.Path != "/p/x" {
			t.Fatalf("recursive watch: %+v %v, want %v on /p/x", ev, err, want)
		}
	}
	call(t, a, zkproto.OpCheckWatches, &zkproto.CheckWatchesRequest{Path: "/p", Type: zkproto.WatcherAny}, nil, zkproto.OK)
	call(t, a, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/p", Type: zkproto.WatcherAny}, nil, zkproto.OK)
	call(t, a, zkproto.OpRemoveWatches, &zkproto.RemoveWatchesRequest{Path: "/p", Type: zkproto.WatcherAny}, nil, zkproto.ErrNoWatcher)

	var eph zkproto.GetEphemeralsResponse
	call(t, b, zkproto.OpGetEphemerals, &zkproto.GetEphemeralsRequest{PrefixPath: "/"}, &eph, zkproto.OK)
	if len(eph.Ephemerals) != 1 || eph.Ephemerals[0] != "/p/x" {
		t.Fatalf("getEphemerals: %v", eph.Ephemerals)
	}
	var n zkproto.GetAllChildrenNumberResponse
	call(t, a, zkproto.OpGetAllChildrenNumber, &zkproto.GetAllChildrenNumberRequest{Path: "/p"}, &n, zkproto.OK)
	if n.TotalNumber != 1 {
		t.Fatalf("getAllChildrenNumber: %d", n.TotalNumber)
	}
	var who zkproto.WhoAmIResponse
	call(t, a, zkproto.OpWhoAmI, nil, &who, zkproto.OK)
	if len(who.ClientInfo) != 1 || who.ClientInfo[0].AuthScheme != "ip" || who.ClientInfo[0].User != "127.0.0.1" {
		t.Fatalf("whoAmI: %+v", who)
	}
	var mr zkproto.MultiResponse
	call(t, a, zkproto.OpMultiRead, &zkproto.MultiRequest{Ops: []zkproto.MultiOp{
		{Op: zkproto.OpGetData, Req: &zkproto.GetDataRequest{Path: "/p/x"}},
		{Op: zkproto.OpGetChildren, Req: &zkproto.GetChildrenRequest{Path: "/nope"}},
	}}, &mr, zkproto.OK)
	if len(mr.Results) != 2 || mr.Results[1].Err != zkproto.ErrNoNode ||
		string(mr.Results[0].Resp.(*zkproto.GetDataResponse).Data) != "1" {
		t.Fatalf("multiRead: %+v", mr.Results)
	}
	call(t, a, zkproto.OpSASL, &zkproto.GetSASLRequest{Token: []byte{1}}, nil, zkproto.ErrUnimplemented)
	call(t, a, zkproto.OpReconfig, &zkproto.ReconfigRequest{CurConfigID: -1}, nil, zkproto.ErrReconfigDisabled)
}

// TestReconfigStandalone: with reconfigEnabled, a standalone server
// answers reconfig UNIMPLEMENTED, as ZooKeeper's does: it has no
// ensemble to change.
func TestReconfigStandalone(t *testing.T) {
	s := startServer(t, func(c *server.Config) { c.ReconfigEnabled = true })
	a := dialRaw(t, s)
	call(t, a, zkproto.OpReconfig, &zkproto.ReconfigRequest{LeavingServers: "1", CurConfigID: -1}, nil, zkproto.ErrUnimplemented)
}

// TestSetWatchesAfterReconnect: a client that was away re-registers its
// watches with the last zxid it saw; changes made meanwhile fire at once.
func TestSetWatchesAfterReconnect(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	open := zkproto.OpenACLUnsafe
	for _, p := range []string{"/w", "/w/gone", "/w/same"} {
		call(t, a, zkproto.OpCreate, &zkproto.CreateRequest{Path: p, ACL: open}, nil, zkproto.OK)
	}
	rel := a.LastZxid
	a.Close()
	call(t, b, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/w", Data: []byte("x"), Version: -1}, &zkproto.SetDataResponse{}, zkproto.OK)
	call(t, b, zkproto.OpDelete, &zkproto.DeleteRequest{Path: "/w/gone", Version: -1}, nil, zkproto.OK)
	call(t, b, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/w/new", ACL: open}, nil, zkproto.OK)
	a2, err := itest.DialRaw(s.Addr().String(), 10000, a.SessionID, a.Passwd)
	if err != nil || a2.SessionID != a.SessionID {
		t.Fatalf("resume: %v (session %x, want %x)", err, a2.SessionID, a.SessionID)
	}
	defer a2.Close()
	call(t, a2, zkproto.OpSetWatches, &zkproto.SetWatches{RelativeZxid: rel,
		DataWatches:  []string{"/w", "/w/gone", "/w/same"},
		ExistWatches: []string{"/w/new", "/w/absent"},
		ChildWatches: []string{"/w"}}, nil, zkproto.OK)
	got := map[string]zkproto.EventType{}
	for _, ev := range a2.Events() {
		got[ev.Path+" "+ev.Type.String()] = ev.Type
	}
	for _, want := range []string{"/w NodeDataChanged", "/w/gone NodeDeleted", "/w/new NodeCreated", "/w NodeChildrenChanged"} {
		if _, ok := got[want]; !ok {
			t.Errorf("missing event %s; got %v", want, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("events %v, want exactly 4", got)
	}
	// The re-armed watch on /w/same fires on the next change.
	call(t, b, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/w/same", Data: []byte("y"), Version: -1}, &zkproto.SetDataResponse{}, zkproto.OK)
	if ev, err := a2.WaitEvent(5 * time.Second); err != nil || ev.Path != "/w/same" || ev.Type != zkproto.EventNodeDataChanged {
		t.Fatalf("re-armed watch: %+v %v", ev, err)
	}
	// An unknown session gets the expired handshake (timeout 0).
	x, err := itest.DialRaw(s.Addr().String(), 10000, 0x7777, make([]byte, 16))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Timeout != 0 || x.SessionID != 0 {
		t.Fatalf("expired handshake: timeout %d session %x", x.Timeout, x.SessionID)
	}
}

// rawConn sends bytes and reports whether the server closed the connection.
func rawConn(t *testing.T, s *server.Server, payload []byte) (closed bool, reply []byte) {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write(payload)
	// Like a client that died: no more bytes will come.
	c.(*net.TCPConn).CloseWrite()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	reply, err = io.ReadAll(c)
	var ne net.Error
	if err != nil && (!asNetErr(err, &ne) || !ne.Timeout()) {
		return true, reply
	}
	return err == nil, reply
}

func asNetErr(err error, target *net.Error) bool {
	ne, ok := err.(net.Error)
	if ok {
		*target = ne
	}
	return ok
}

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestBadInput: oversized frames, garbage, truncated and malformed records
// and unknown opcodes get a ZooKeeper error or a closed connection, and the
// server keeps serving everyone else.
func TestBadInput(t *testing.T) {
	s := startServer(t, func(c *server.Config) { c.MaxClientCnxns = 20; c.MaxDataBytes = 4096 })
	bystander := dialRaw(t, s)
	call(t, bystander, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/ok", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)

	// Before the handshake: a huge length, garbage, a truncated request.
	for name, b := range map[string][]byte{
		"oversized frame": binary.BigEndian.AppendUint32(nil, 1<<30),
		"negative length": binary.BigEndian.AppendUint32(nil, 0xfffffff0),
		"garbage":         frame([]byte("\x01\x02garbage")),
		"truncated":       append(binary.BigEndian.AppendUint32(nil, 44), 0, 0, 0),
	} {
		if closed, _ := rawConn(t, s, b); !closed {
			t.Errorf("%s: connection left open", name)
		}
	}
	// After the handshake.
	r := dialRaw(t, s)
	// A body that does not decode is MARSHALLINGERROR, and the connection
	// keeps working.
	r.WriteFrame(func(e *zkproto.Encoder) {
		(&zkproto.RequestHeader{Xid: 100, Op: zkproto.OpCreate}).Encode(e)
		e.Int(-5)
	})
	if f, err := r.ReadFrame(); err != nil {
		t.Fatal(err)
	} else {
		var h zkproto.ReplyHeader
		h.Decode(zkproto.NewDecoder(f))
		if h.Xid != 100 || h.Err != zkproto.ErrMarshallingError {
			t.Fatalf("malformed body: %+v", h)
		}
	}
	call(t, r, zkproto.OpCreate, &zkproto.CreateRequest{Path: "bad", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.ErrBadArguments)
	call(t, r, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/x", ACL: []zkproto.ACL{{Perms: 31, ID: zkproto.Id{Scheme: "ip", ID: "1.2.3.4/99"}}}}, nil, zkproto.ErrInvalidACL)
	call(t, r, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/ok", Data: make([]byte, 5000), Version: -1}, nil, zkproto.ErrBadArguments)
	// An unknown opcode is answered UNIMPLEMENTED and the connection closed.
	r.WriteFrame(func(e *zkproto.Encoder) { (&zkproto.RequestHeader{Xid: 200, Op: 77}).Encode(e) })
	f, err := r.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	var h zkproto.ReplyHeader
	h.Decode(zkproto.NewDecoder(f))
	if h.Err != zkproto.ErrUnimplemented {
		t.Fatalf("unknown opcode: %+v", h)
	}
	if _, err := r.ReadFrame(); err == nil {
		t.Fatal("connection still open after an unknown opcode")
	}
	// A frame over the maximum packet size after the handshake.
	r2 := dialRaw(t, s)
	r2.NC.Write(binary.BigEndian.AppendUint32(nil, zkproto.DefaultMaxPacket+1))
	if _, err := r2.ReadFrame(); err == nil {
		t.Fatal("connection still open after an oversized frame")
	}
	// The per-IP limit refuses connection 21.
	var conns []net.Conn
	for i := 0; i < 25; i++ {
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	refused := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := bufio.NewReader(c).ReadByte(); err == io.EOF {
			refused++
		}
		c.Close()
	}
	if refused < 5 {
		t.Errorf("per-IP limit: %d connections refused, want at least 5", refused)
	}
	// Everyone else is still served.
	call(t, bystander, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/ok"}, &zkproto.GetDataResponse{}, zkproto.OK)
}

func TestMetricsEndpoint(t *testing.T) {
	port, err := itest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(c *server.Config) { c.MetricsPort = port })
	r := dialRaw(t, s)
	call(t, r, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/m", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)
	resp, err := http.Get("http://" + s.MetricsAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{`giraffe_requests_total{op="create"} 1`, "giraffe_znodes 5", "giraffe_fsync_seconds_count", "giraffe_sessions 1"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestZooCfgCompatibility: an existing zoo.cfg configures the server.
func TestZooCfgCompatibility(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "zoo.cfg")
	os.WriteFile(cfgPath, []byte(`# a ZooKeeper config
tickTime=500
dataDir=`+dir+`/data
dataLogDir=`+dir+`/log
clientPort=2999
minSessionTimeout=1000
maxSessionTimeout=9000
maxClientCnxns=7
4lw.commands.whitelist=ruok, stat
jute.maxbuffer=0x200000
initLimit=10
server.1=localhost:2888:3888
`), 0o644)
	cfg := server.DefaultConfig()
	ignored, err := server.LoadConfigFile(cfgPath, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TickTime != 500*time.Millisecond || cfg.DataDir != dir+"/data" || cfg.DataLogDir != dir+"/log" ||
		cfg.ClientPort != 2999 || cfg.MinSessionTimeout != time.Second || cfg.MaxSessionTimeout != 9*time.Second ||
		cfg.MaxClientCnxns != 7 || cfg.MaxPacket != 0x200000 || strings.Join(cfg.FourLetterWords, ",") != "ruok,stat" {
		t.Fatalf("config: %+v", cfg)
	}
	if strings.Join(ignored.ZooKeeper, ",") != "initLimit" || len(ignored.Unknown) != 0 {
		t.Fatalf("ignored keys %v", ignored)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.Replicated() {
		t.Fatal("one server line must mean standalone, as in ZooKeeper")
	}
}

// TestClientAheadIsRefused: a client that has seen a newer zxid than the
// server (it talked to a server further ahead) is closed, not served stale
// state.
func TestClientAheadIsRefused(t *testing.T) {
	s := startServer(t)
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e := zkproto.NewEncoder(nil)
	(&zkproto.ConnectRequest{LastZxidSeen: 1 << 40, TimeOut: 10000, Passwd: make([]byte, 16), HasReadOnly: true}).Encode(e)
	c.Write(frame(e.Bytes()))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Fatalf("server answered a client ahead of it with %d bytes", n)
	}
}

// TestSetWatches2RestoresPersistentWatches: persistent and recursive
// watches come back through setWatches2 after a reconnect.
func TestSetWatches2RestoresPersistentWatches(t *testing.T) {
	s := startServer(t)
	a, b := dialRaw(t, s), dialRaw(t, s)
	call(t, a, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/s2", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)
	a.Close()
	a2, err := itest.DialRaw(s.Addr().String(), 10000, a.SessionID, a.Passwd)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	call(t, a2, zkproto.OpSetWatches2, &zkproto.SetWatches2{RelativeZxid: a.LastZxid,
		PersistentWatches: []string{"/s2"}, PersistentRecursiveWatches: []string{"/s2"}}, nil, zkproto.OK)
	call(t, b, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/s2/c", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)
	call(t, b, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/s2/c/d", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)
	var got []string
	for len(got) < 3 {
		ev, err := a2.WaitEvent(5 * time.Second)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, ev.Type.String()+" "+ev.Path)
	}
	// Creating /s2/c fires the recursive watch (created) and the persistent
	// one on /s2 (children changed); creating /s2/c/d only the recursive one,
	// which never reports children changes.
	want := []string{"NodeCreated /s2/c", "NodeChildrenChanged /s2", "NodeCreated /s2/c/d"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", got, want)
	}
	if ev, err := a2.WaitEvent(300 * time.Millisecond); err == nil {
		t.Fatalf("unexpected event %+v", ev)
	}
}

// TestSnapshotsAndRestart: with a small snapCount the server writes
// snapshots and purges old ones, and a restart recovers exactly the state.
func TestSnapshotsAndRestart(t *testing.T) {
	dir := t.TempDir()
	mut := func(c *server.Config) { c.DataDir = dir; c.SnapCount = 200 }
	s := startServer(t, mut)
	r := dialRaw(t, s)
	call(t, r, zkproto.OpCreate, &zkproto.CreateRequest{Path: "/snap", ACL: zkproto.OpenACLUnsafe}, nil, zkproto.OK)
	for i := 0; i < 1500; i++ {
		call(t, r, zkproto.OpSetData, &zkproto.SetDataRequest{Path: "/snap", Data: []byte(fmt.Sprint(i)), Version: -1}, &zkproto.SetDataResponse{}, zkproto.OK)
	}
	r.Close()
	s.Close()
	snaps, _ := filepath.Glob(filepath.Join(dir, "snap", "snapshot.*"))
	if len(snaps) == 0 || len(snaps) > 4 {
		t.Fatalf("%d snapshots on disk, want between 1 and retain+1", len(snaps))
	}
	s2 := startServer(t, mut)
	r2 := dialRaw(t, s2)
	var got zkproto.GetDataResponse
	call(t, r2, zkproto.OpGetData, &zkproto.GetDataRequest{Path: "/snap"}, &got, zkproto.OK)
	if string(got.Data) != "1499" || got.Stat.Version != 1500 {
		t.Fatalf("after restart: %q version %d", got.Data, got.Stat.Version)
	}
}
