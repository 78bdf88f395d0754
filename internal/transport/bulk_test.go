package transport

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// snapshotMsg is a Sync carrying a snapshot of n random bytes.
func snapshotMsg(from, to gpaxos.ID, index gpaxos.Zxid, n int) gpaxos.Message {
	data := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(index)})
	r.Read(data)
	return gpaxos.Message{Type: gpaxos.MsgSync, From: from, To: to, Epoch: 3, Commit: index + 2,
		Snapshot: &gpaxos.Snapshot{Index: index, Voters: quorum.Config{Groups: [][]quorum.ID{{1, 2, 3}}}, Data: data},
		Entries:  []gpaxos.Entry{{Zxid: index + 1, Data: []byte("after")}, {Zxid: index + 2, Data: []byte("snapshot")}},
		Down:     []quorum.ID{3}}
}

func TestSnapshotLargerThanAFrameArrivesWhole(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.MaxFrameSize = minFrameSize })
	a, b := trs[0], trs[1]
	waitConnected(t, a, 2)
	// Held at the writer, so that everything below is queued before any
	// of it is written and the order of the writes is the writer's.
	a.Faults().Pause()
	a.Send(msg(1, 2, 1))
	snap := snapshotMsg(1, 2, 100, 1<<20)
	if !a.Send(snap) {
		t.Fatal("a snapshot 256 times the frame size was not queued")
	}
	for i := uint64(2); i <= 10; i++ {
		a.Send(msg(1, 2, i))
	}
	a.Faults().Resume()
	got := recvN(t, b, 11, 10*time.Second)
	// The message queued before the snapshot goes before it; those queued
	// after it overtake it, a chunk at a time, instead of waiting for all
	// 257 chunks.
	for i, m := range got[:10] {
		if m.Type != gpaxos.MsgAppend || m.Commit != gpaxos.Zxid(i+1) {
			t.Fatalf("message %d is %v commit %d, want the append of commit %d", i, m.Type, m.Commit, i+1)
		}
	}
	m := got[10]
	if m.Snapshot == nil || !bytes.Equal(m.Snapshot.Data, snap.Snapshot.Data) || m.Snapshot.Index != 100 ||
		len(m.Entries) != 2 || string(m.Entries[1].Data) != "snapshot" || m.Commit != 102 || len(m.Down) != 1 {
		t.Fatalf("the snapshot arrived damaged: index %v, %d entries, commit %d", m.Snapshot, len(m.Entries), m.Commit)
	}
	if s, ok := waitStats(a, func(s Stats) bool { return s.Sent == 11 }); !ok || s.Dropped.Total() != 0 {
		t.Fatalf("sender: %+v", s)
	}
}

func TestNewerSnapshotReplacesOneNotStarted(t *testing.T) {
	trs := newCluster(t, 3, nil)
	a := trs[0]
	waitConnected(t, a, 2)
	waitConnected(t, a, 3)
	a.Faults().Pause()
	if !a.Send(snapshotMsg(1, 2, 10, 4<<20)) {
		t.Fatal("first snapshot refused")
	}
	if !a.Send(snapshotMsg(1, 2, 15, 4<<20)) {
		t.Fatal("a newer snapshot did not replace one not started")
	}
	if !a.Send(snapshotMsg(1, 3, 20, 1000)) {
		t.Fatal("a snapshot to another peer was refused")
	}
	if s := a.Stats(); s.Dropped.SnapshotReplaced != 1 || s.Peers[2].Queued != 1 || s.Peers[2].QueuedBytes < 4<<20 {
		t.Fatalf("%+v", s)
	}
	a.Faults().Resume()
	if m := recvN(t, trs[1], 1, 10*time.Second)[0]; m.Snapshot.Index != 15 {
		t.Fatalf("got snapshot %d", m.Snapshot.Index)
	}
	expectNothing(t, trs[1], 50*time.Millisecond)
	if m := recvN(t, trs[2], 1, 10*time.Second)[0]; m.Snapshot.Index != 20 {
		t.Fatalf("got snapshot %d", m.Snapshot.Index)
	}
	// Once the first is written, the next one goes.
	waitFor(t, 5*time.Second, "the lane to empty", func() bool { return a.Stats().Peers[2].Queued == 0 })
	if !a.Send(snapshotMsg(1, 2, 20, 1000)) {
		t.Fatal("snapshot refused after the first was written")
	}
	if m := recvN(t, trs[1], 1, 10*time.Second)[0]; m.Snapshot.Index != 20 {
		t.Fatalf("got snapshot %d", m.Snapshot.Index)
	}
}

func TestSnapshotOverMaxMessageSizeDropped(t *testing.T) {
	trs := newCluster(t, 2, func(c *Config) { c.MaxFrameSize, c.MaxMessageSize = minFrameSize, 2*minFrameSize })
	if trs[0].Send(snapshotMsg(1, 2, 5, 2*minFrameSize)) {
		t.Fatal("a snapshot over MaxMessageSize was queued")
	}
	if s := trs[0].Stats(); s.Dropped.TooLarge != 1 {
		t.Fatalf("TooLarge = %d", s.Dropped.TooLarge)
	}
}

// chunkFrames cuts the encoding of m into chunk frames of at most n
// message bytes, as a sender's writer does.
func chunkFrames(m gpaxos.Message, n int) []byte {
	b := &bulkMsg{parts: [3][]byte{Encode(&m)}, size: EncodedSize(&m)}
	var out bytes.Buffer
	for !b.done() {
		b.writeChunk(&out, n)
	}
	return out.Bytes()
}

func TestBrokenConnectionDropsAStartedSnapshot(t *testing.T) {
	// The receiver is a raw listener that takes the handshake, reads a
	// few chunks of a snapshot larger than the sockets' buffers and hangs
	// up; the sender must then let a new snapshot
	// go, from its first chunk, on the next connection.
	a := newTransport(t, 1, func(c *Config) { c.MaxFrameSize = minFrameSize })
	ln := newRawListener(t, 2)
	book := map[gpaxos.ID]string{2: ln.addr()}
	if err := a.SetPeers(book); err != nil {
		t.Fatal(err)
	}
	c, br := ln.accept(t)
	if !a.Send(snapshotMsg(1, 2, 7, 64<<20)) {
		t.Fatal("snapshot refused")
	}
	for range 3 {
		if _, err := readFrame(br, minFrameSize); err != nil {
			t.Fatal(err)
		}
	}
	// Started: a newer one is dropped, not put in its place.
	if a.Send(snapshotMsg(1, 2, 9, 1000)) {
		t.Fatal("a snapshot replaced one being written")
	}
	if s := a.Stats(); s.Dropped.SnapshotBusy != 1 {
		t.Fatalf("SnapshotBusy = %d", s.Dropped.SnapshotBusy)
	}
	c.Close()
	waitFor(t, 5*time.Second, "the started snapshot to be dropped", func() bool {
		return a.Stats().Peers[2].Queued == 0
	})
	c, br = ln.accept(t)
	snap := snapshotMsg(1, 2, 8, 100_000)
	if !a.Send(snap) {
		t.Fatal("a snapshot was refused after the one on its way was lost")
	}
	asm := assembler{limit: DefaultMaxMessageSize}
	for {
		size, err := readFrameHeader(br, minFrameSize)
		if err != nil {
			t.Fatal(err)
		}
		kind := chunkKind(br, size)
		if kind == 0 {
			t.Fatal("a whole frame on a link that only carries a snapshot")
		}
		b, err := asm.read(br, kind, size-1)
		if err != nil {
			t.Fatal(err)
		}
		if b != nil {
			m, err := Decode(b)
			if err != nil || m.Snapshot.Index != 8 || !bytes.Equal(m.Snapshot.Data, snap.Snapshot.Data) {
				t.Fatalf("reassembled %v, %v", m.Snapshot, err)
			}
			break
		}
	}
	c.Close()
}

func TestChunkedMessageInterleavedWithWholeOnes(t *testing.T) {
	b := newTransport(t, 2, func(c *Config) {
		c.Peers = map[gpaxos.ID]string{1: "127.0.0.1:1"}
		c.MaxFrameSize = minFrameSize
	})
	c := rawPeer(t, b, 1)
	frames := chunkFrames(snapshotMsg(1, 2, 9, 10_000), 3000)
	// Whole messages between the chunks are delivered at once; the
	// chunked one when its last chunk is in.
	var stream bytes.Buffer
	br := bufio.NewReader(bytes.NewReader(frames))
	for i := 0; ; i++ {
		size, err := readFrameHeader(br, minFrameSize)
		if err == io.EOF {
			break
		}
		body, _ := readFrameBody(br, size)
		writeFrame(&stream, body)
		writeFrame(&stream, Encode(&gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Commit: gpaxos.Zxid(i)}))
	}
	if _, err := c.Write(stream.Bytes()); err != nil {
		t.Fatal(err)
	}
	got := recvN(t, b, 5, 5*time.Second)
	for i, m := range got {
		if i == 3 {
			if m.Snapshot == nil || m.Snapshot.Index != 9 {
				t.Fatalf("message 3 is not the snapshot: %+v", m)
			}
			continue
		}
		want := i
		if i > 3 {
			want = i - 1
		}
		if m.Commit != gpaxos.Zxid(want) {
			t.Fatalf("message %d commit %d, want %d", i, m.Commit, want)
		}
	}
}

func TestBadChunksCloseConnection(t *testing.T) {
	good := chunkFrames(snapshotMsg(1, 2, 9, 10_000), 3000)
	firstLen := 4 + int(binary.BigEndian.Uint32(good))
	frame := func(kind byte, body ...byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(1+len(body))), append([]byte{kind}, body...)...)
	}
	chunk := func(body ...byte) []byte { return frame(chunkFirst, body...) }
	tests := []struct {
		name, log string
		stream    []byte
	}{
		{"announces too much", "limit", chunk(binary.AppendUvarint(nil, 1<<40)...)},
		{"announces nothing", "chunked message of 0 bytes", chunk(0)},
		{"truncated size", "announcing a message", chunk(0x80)},
		{"carries more than announced", "more than the", chunk(3, 1, 2, 3, 4)},
		{"undecodable when whole", "malformed message", chunk(3, 9, 9, 9)},
		{"first chunk twice", "first chunk before the last", append(good[:firstLen:firstLen], good[:firstLen]...)},
		{"next chunk first", "without the first", frame(chunkNext, 1, 2, 3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &syncBuffer{}
			b := newTransport(t, 2, func(c *Config) {
				c.Peers = map[gpaxos.ID]string{1: "127.0.0.1:1"}
				c.MaxFrameSize = minFrameSize
				c.Logger = slog.New(slog.NewTextHandler(logs, nil))
			})
			c := rawPeer(t, b, 1)
			if _, err := c.Write(tt.stream); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
			expectNothing(t, b, 50*time.Millisecond)
			waitFor(t, 5*time.Second, "the log line "+tt.log, func() bool { return strings.Contains(logs.String(), tt.log) })
		})
	}
}

// FuzzAssembler feeds arbitrary frames to a receiver's reassembly: it
// never panics, never returns more than its limit, and what it returns
// is what the chunks carried.
func FuzzAssembler(f *testing.F) {
	f.Add(chunkFrames(snapshotMsg(1, 2, 9, 1000), 300))
	f.Add([]byte{0, 0, 0, 2, chunkFirst, 0})
	f.Add([]byte{0, 0, 0, 3, chunkFirst, 4, 1, 0, 0, 0, 4, chunkNext, 2, 3, 4})
	f.Fuzz(func(t *testing.T, in []byte) {
		br := bufio.NewReader(bytes.NewReader(in))
		asm := assembler{limit: 1 << 16}
		for {
			size, err := readFrameHeader(br, 1<<16)
			if err != nil {
				return
			}
			kind := chunkKind(br, size)
			if kind == 0 {
				if _, err := readFrameBody(br, size); err != nil {
					return
				}
				continue
			}
			b, err := asm.read(br, kind, size-1)
			if err != nil {
				if !errors.Is(err, errProtocol) && !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if len(b) > 1<<16 {
				t.Fatalf("assembled %d bytes over the limit", len(b))
			}
		}
	})
}

// rawListener poses as server id: it accepts the handshake of whoever
// dials it and lets the test read what follows.
type rawListener struct {
	ln net.Listener
	id gpaxos.ID
}

func newRawListener(t *testing.T, id gpaxos.ID) *rawListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &rawListener{ln: ln, id: id}
}

func (l *rawListener) addr() string { return l.ln.Addr().String() }

// accept takes the next connection and answers its hello.
func (l *rawListener) accept(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := l.ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	frame, err := readFrame(br, maxHandshakeFrame)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := decodeHello(frame); err != nil || h.To != l.id {
		t.Fatalf("hello %+v, %v", h, err)
	}
	if err := writeFrame(c, ack{}.encode()); err != nil {
		t.Fatal(err)
	}
	return c, br
}
