package transport

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// rawPeer dials tr and, when from is not zero, completes the handshake as
// server from.
func rawPeer(t *testing.T, tr *Transport, from gpaxos.ID) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", tr.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if from == 0 {
		return c
	}
	if err := writeFrame(c, hello{Cluster: testCluster, From: from, To: tr.ID()}.encode()); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	frame, err := readFrame(bufio.NewReader(c), maxHandshakeFrame)
	if err != nil {
		t.Fatal(err)
	}
	if a, err := decodeAck(frame); err != nil || a.Reason != "" {
		t.Fatalf("handshake: %+v, %v", a, err)
	}
	return c
}

// expectClosed waits for the transport to close c.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the transport did not close the connection")
		}
	}
}

func TestOversizeFrameClosesConnection(t *testing.T) {
	logs := &syncBuffer{}
	trs := newCluster(t, 3, func(c *Config) {
		c.MaxFrameSize = minFrameSize
		if c.ID == 2 {
			c.Logger = slog.New(slog.NewTextHandler(logs, nil))
		}
	})
	// The raw client poses as server 4, so that no real peer's connection
	// replaces (and closes) it.
	book := trs[1].Peers()
	book[4] = "127.0.0.1:1"
	if err := trs[1].SetPeers(book); err != nil {
		t.Fatal(err)
	}
	c := rawPeer(t, trs[1], 4)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], minFrameSize+1)
	if _, err := c.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	waitFor(t, 5*time.Second, "the log line", func() bool { return strings.Contains(logs.String(), "frame too large") })
	if s := trs[1].Stats(); s.ConnErrors != 1 {
		t.Fatalf("ConnErrors = %d", s.ConnErrors)
	}
	// Server 3 was never disturbed.
	trs[2].Send(msg(3, 2, 1))
	recvN(t, trs[1], 1, 5*time.Second)
}

func TestBadMessagesCloseConnection(t *testing.T) {
	valid := Encode(&gpaxos.Message{Type: gpaxos.MsgProp, From: 1, To: 2})
	tests := []struct {
		name, log string
		frame     []byte
	}{
		{"undecodable", "malformed message", []byte{CodecVersion, 0xee}},
		{"spoofed sender", "protocol violation", Encode(&gpaxos.Message{Type: gpaxos.MsgProp, From: 3, To: 2})},
		{"wrong receiver", "protocol violation", Encode(&gpaxos.Message{Type: gpaxos.MsgProp, From: 1, To: 3})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			b := newTransport(t, 2, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{1: "127.0.0.1:1"}
				c.Logger = slog.New(slog.NewTextHandler(logs, nil))
			})
			c := rawPeer(t, b, 1)
			// A good message first: it is delivered, the bad one is not.
			if err := writeFrame(c, valid); err != nil {
				t.Fatal(err)
			}
			if err := writeFrame(c, tt.frame); err != nil {
				t.Fatal(err)
			}
			recvN(t, b, 1, 5*time.Second)
			expectClosed(t, c)
			expectNothing(t, b, 50*time.Millisecond)
			waitFor(t, 5*time.Second, "the log line", func() bool { return strings.Contains(logs.String(), tt.log) })
		})
	}
}

func TestGarbageClients(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.HandshakeTimeout = 200 * time.Millisecond })
	b := trs[1]
	r := rand.New(rand.NewPCG(5, 6))
	inputs := [][]byte{
		[]byte("GET / HTTP/1.1\r\nHost: giraffe\r\n\r\n"),
		{0xff, 0xff, 0xff, 0xff},                        // a frame of 4 GiB
		{0, 0, 0, 9, 'G', 'R', 'F', 'P', 9, 1, 2, 0, 0}, // another handshake version
		append([]byte{0, 0, 0, 5}, helloMagic[:]...),    // truncated hello
		{0, 0, 0x10, 0, 'G', 'R', 'F', 'P', 1, 1, 2, 0}, // hello over its bound
	}
	for range 20 {
		g := make([]byte, r.IntN(200))
		for i := range g {
			g[i] = byte(r.UintN(256))
		}
		inputs = append(inputs, g)
	}
	var conns []net.Conn
	for _, in := range inputs {
		c := rawPeer(t, b, 0)
		if _, err := c.Write(in); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	silent := rawPeer(t, b, 0) // says nothing: the handshake timeout closes it
	// The transport keeps serving its real peer meanwhile.
	for i := range uint64(50) {
		trs[0].Send(msg(1, 2, i))
	}
	recvN(t, b, 50, 5*time.Second)
	for _, c := range append(conns, silent) {
		expectClosed(t, c)
	}
	waitFor(t, 5*time.Second, "the garbage connections to be forgotten", func() bool {
		b.mu.RLock()
		defer b.mu.RUnlock()
		return len(b.inbound) == 1 // server 1's connection
	})
}

func TestReadFrameAllocatesWhatArrives(t *testing.T) {
	// A frame that announces 256 MiB and delivers 10 bytes.
	in := append(binary.BigEndian.AppendUint32(nil, 256<<20), make([]byte, 10)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readFrame(bufio.NewReader(strings.NewReader(string(in))), 512<<20)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want ErrUnexpectedEOF", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 4*frameChunk {
		t.Fatalf("allocated %d bytes for 10 received", grew)
	}
	// A frame of several chunks arrives whole.
	payload := make([]byte, 3*frameChunk+17)
	for i := range payload {
		payload[i] = byte(i)
	}
	got, err := readFrame(bufio.NewReader(strings.NewReader(string(append(binary.BigEndian.AppendUint32(nil, uint32(len(payload))), payload...)))), 4*frameChunk)
	if err != nil || string(got) != string(payload) {
		t.Fatalf("multi-chunk frame: %d bytes, %v", len(got), err)
	}
	if _, err := readFrame(bufio.NewReader(strings.NewReader("\x00\x00\x01\x00")), 255); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("oversize: %v", err)
	}
}

func TestHandshakeCodec(t *testing.T) {
	h := hello{Cluster: "giraffe", From: 1 << 40, To: 3}
	got, err := decodeHello(h.encode())
	if err != nil || got != h {
		t.Fatalf("hello round trip: %+v, %v", got, err)
	}
	for _, bad := range [][]byte{nil, []byte("GRFP"), append(h.encode(), 0), h.encode()[:8]} {
		if _, err := decodeHello(bad); err == nil {
			t.Errorf("decodeHello(% x) accepted", bad)
		}
	}
	a := ack{Reason: "no"}
	if got, err := decodeAck(a.encode()); err != nil || got != a {
		t.Fatalf("ack round trip: %+v, %v", got, err)
	}
	if _, err := decodeAck([]byte{handshakeVersion, 5, 'x'}); err == nil {
		t.Fatal("truncated ack accepted")
	}
}

func TestBackoff(t *testing.T) {
	b := backoff{min: 10 * time.Millisecond, max: time.Second}
	step := 10 * time.Millisecond
	for i := range 20 {
		d := b.next()
		if d < step/2 || d > step {
			t.Fatalf("attempt %d: %v outside [%v, %v]", i, d, step/2, step)
		}
		step = min(2*step, time.Second)
	}
	b.reset()
	if d := b.next(); d > 10*time.Millisecond {
		t.Fatalf("after reset: %v", d)
	}
}
