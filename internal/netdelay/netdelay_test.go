package netdelay

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// TestRoundTripDelayAndOrder: an echo over a wrapped connection takes at
// least the added RTT, bytes keep their order, and writes do not block
// for the delay.
func TestRoundTripDelayAndOrder(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c)
	}()
	const rtt = 80 * time.Millisecond
	c, err := Dialer(rtt)(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var want bytes.Buffer
	start := time.Now()
	for i := range 100 {
		b := []byte{byte(i), byte(i + 1), byte(i + 2)}
		want.Write(b)
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d > rtt/4 {
		t.Fatalf("100 writes took %v: writes wait for the delay", d)
	}
	got := make([]byte, want.Len())
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < rtt {
		t.Fatalf("echo after %v, want at least %v", d, rtt)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatal("bytes reordered or changed")
	}
	c.Close()
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("write after Close succeeded")
	}
}
