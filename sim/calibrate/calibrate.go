// Package calibrate measures the simulator's cost model on the real code.
// In process: the CPU time the peer transport spends per message and per
// byte (encode, write, read and decode over loopback TCP), the CPU time of
// one entry through the log and the data tree, and the latency of one
// fsync of a batch in the write-ahead log (`giraffe-lab sim --calibrate`).
// On real servers: the model's other CPU terms fitted to what
// scripts/bench-roles.sh measured, and the simulator's per-role
// predictions checked against it (FitRoles, ValidateRoles; `giraffe-lab
// costmodel`). sim.CalibratedCost holds the figures recorded in
// docs/benchmarks.md.
package calibrate

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"syscall"
	"time"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/storage/wal"
	"github.com/giraffe-coord/giraffe/internal/transport"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/sim"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Measurement is one calibration: the fitted cost model and the raw
// figures it was fitted from.
type Measurement struct {
	Cost sim.Cost `json:"cost"`
	// SmallMsgCPUUS and LargeMsgCPUUS are the CPU µs per message (both
	// ends together) of messages of SmallBytes and LargeBytes.
	SmallBytes, LargeBytes       int
	SmallMsgCPUUS, LargeMsgCPUUS float64
	// FsyncBatch is the number of 1 KiB records per measured fsync.
	FsyncBatch int
}

// EntryCPUUS measures the CPU time of one 1 KiB setData entry on a server's
// path, without the fsync: encoded, appended to a real log in dir (its
// writes to the file included), decoded and applied to a data tree.
func EntryCPUUS(dir string, n int) (float64, error) {
	l, done, err := tempLog(dir)
	if err != nil {
		return 0, err
	}
	defer done()
	tree := datatree.New()
	const session = 1
	tree.Apply(&txn.Entry{Zxid: 1, Session: session, Timeout: 10000, Op: txn.Op{Kind: txn.KindCreateSession}})
	create := &txn.Entry{Zxid: 2, Session: session, Op: txn.Op{Kind: txn.KindCreate, OpCode: zkproto.OpCreate, Path: "/calibrate", Data: []byte{}, ACL: zkproto.OpenACLUnsafe}}
	if res, _ := tree.Apply(create); res.Err != zkproto.OK {
		return 0, fmt.Errorf("calibrate: creating /calibrate: %v", res.Err)
	}
	data := make([]byte, 1024)
	var buf []byte
	start := cpuUS()
	for i := 0; i < n; i++ {
		e := &txn.Entry{Zxid: int64(i + 3), Session: session, Op: txn.Op{Kind: txn.KindSetData, OpCode: zkproto.OpSetData, Path: "/calibrate", Data: data, Version: -1}}
		buf = e.Marshal(buf[:0])
		if err := l.Append(e.Zxid, buf); err != nil {
			return 0, err
		}
		got, err := txn.Unmarshal(buf)
		if err != nil {
			return 0, err
		}
		if res, _ := tree.Apply(got); res.Err != zkproto.OK {
			return 0, fmt.Errorf("calibrate: applying a setData: %v", res.Err)
		}
	}
	return (cpuUS() - start) / float64(n), nil
}

// Run measures the transport with msgs messages of each size and the log
// with syncs fsyncs in dir (the disk the servers would use).
func Run(dir string, msgs, syncs int) (Measurement, error) {
	m := Measurement{SmallBytes: 64, LargeBytes: 64 << 10, FsyncBatch: 64}
	var err error
	if m.SmallMsgCPUUS, err = transportCPU(msgs, 0); err != nil {
		return m, err
	}
	if m.LargeMsgCPUUS, err = transportCPU(max(msgs/20, 100), m.LargeBytes); err != nil {
		return m, err
	}
	// Each message costs its sender and its receiver: the model charges
	// both ends, so each gets half of the measured total.
	perByte := (m.LargeMsgCPUUS - m.SmallMsgCPUUS) / float64(m.LargeBytes-m.SmallBytes)
	m.Cost.CPUPerByteUS = max(perByte, 0) / 2
	m.Cost.CPUPerMsgUS = max(m.SmallMsgCPUUS-perByte*float64(m.SmallBytes), 0) / 2
	fs, err := fsyncUS(dir, syncs, m.FsyncBatch)
	if err != nil {
		return m, err
	}
	if m.Cost.CPUPerEntryUS, err = EntryCPUUS(dir, max(msgs/2, 1000)); err != nil {
		return m, err
	}
	m.Cost.FsyncUS = fs
	m.Cost.BandwidthBpUS = sim.CalibratedCost.BandwidthBpUS
	m.Cost.LinkLatencyUS = sim.CalibratedCost.LinkLatencyUS
	return m, nil
}

// cpuUS returns the process's user+system CPU time in µs.
func cpuUS() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec)*1e6 + float64(t.Usec) }
	return tv(ru.Utime) + tv(ru.Stime)
}

// transportCPU sends n append messages carrying payload bytes between two
// real transports on loopback and returns the process CPU µs per message.
func transportCPU(n, payload int) (float64, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := transport.New(transport.Config{ID: 1, ListenAddr: "127.0.0.1:0", Cluster: "calibrate", QueueLen: 1 << 16, Logger: quiet})
	if err != nil {
		return 0, err
	}
	defer a.Close()
	b, err := transport.New(transport.Config{ID: 2, ListenAddr: "127.0.0.1:0", Cluster: "calibrate", QueueLen: 1 << 16, Logger: quiet})
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if err := a.SetPeers(map[gpaxos.ID]string{2: b.Addr().String()}); err != nil {
		return 0, err
	}
	if err := b.SetPeers(map[gpaxos.ID]string{1: a.Addr().String()}); err != nil {
		return 0, err
	}
	msg := gpaxos.Message{Type: gpaxos.MsgAppend, From: 1, To: 2, Epoch: 1, Group: 0}
	if payload > 0 {
		msg.Entries = []gpaxos.Entry{{Zxid: gpaxos.MakeZxid(1, 1), Type: gpaxos.EntryNormal, Data: make([]byte, payload)}}
	}
	// Warm up: the connection is dialled on the first send.
	deadline := time.Now().Add(10 * time.Second)
	for {
		a.Send(msg)
		select {
		case <-b.Recv():
		case <-time.After(50 * time.Millisecond):
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("calibrate: transports did not connect")
			}
			continue
		}
		break
	}
	// Send in windows so the queues never overflow.
	const window = 256
	start := cpuUS()
	for sent := 0; sent < n; {
		k := min(window, n-sent)
		for i := 0; i < k; i++ {
			for !a.Send(msg) {
				time.Sleep(time.Millisecond)
			}
		}
		for got := 0; got < k; {
			select {
			case ms := <-b.Recv():
				got += len(ms)
			case <-time.After(10 * time.Second):
				return 0, fmt.Errorf("calibrate: messages lost on loopback")
			}
		}
		sent += k
	}
	return (cpuUS() - start) / float64(n), nil
}

// fsyncUS appends batches of 1 KiB records to a real log in dir, syncing
// after each, and returns the median µs of one append+sync.
func fsyncUS(dir string, n, batch int) (int64, error) {
	l, done, err := tempLog(dir)
	if err != nil {
		return 0, err
	}
	defer done()
	rec := make([]byte, 1024)
	var z int64
	times := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		t0 := time.Now()
		for j := 0; j < batch; j++ {
			z++
			if err := l.Append(z, rec); err != nil {
				return 0, err
			}
		}
		if err := l.Sync(); err != nil {
			return 0, err
		}
		times = append(times, time.Since(t0))
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	return times[len(times)/2].Microseconds(), nil
}

// tempLog opens a write-ahead log in a new directory under dir; done
// closes it and removes the directory.
func tempLog(dir string) (l *wal.Log, done func(), err error) {
	tmp, err := os.MkdirTemp(dir, "calibrate-wal-")
	if err != nil {
		return nil, nil, err
	}
	l, err = wal.Open(tmp, wal.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		os.RemoveAll(tmp)
		return nil, nil, err
	}
	return l, func() { l.Close(); os.RemoveAll(tmp) }, nil
}
