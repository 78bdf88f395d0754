package datatree

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// benchTree returns a tree with a session and n nodes /bench/n<i> holding
// size bytes each.
func benchTree(b *testing.B, n, size int) (*Tree, []string) {
	tr := New()
	tr.Apply(&txn.Entry{Zxid: 1, Session: sess, Op: txn.Op{Kind: txn.KindCreateSession}})
	tr.Apply(&txn.Entry{Zxid: 2, Session: sess, Op: createOp("/bench", nil, 0)})
	paths := make([]string, n)
	data := make([]byte, size)
	for i := range paths {
		paths[i] = "/bench/n" + strconv.Itoa(i)
		if r, _ := tr.Apply(&txn.Entry{Zxid: int64(3 + i), Session: sess, Op: createOp(paths[i], data, 0)}); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
	}
	return tr, paths
}

// BenchmarkApplyCreate measures a create of a new 1 KiB znode: the
// paper's create benchmark as the state machine sees it.
func BenchmarkApplyCreate(b *testing.B) {
	tr, _ := benchTree(b, 0, 0)
	paths := make([]string, b.N)
	for i := range paths {
		paths[i] = "/bench/c" + strconv.Itoa(i)
	}
	data := make([]byte, 1024)
	e := txn.Entry{Session: sess, Time: 1, Op: createOp("", data, 0)}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		e.Zxid = int64(100 + i)
		e.Op.Path = paths[i]
		if r, _ := tr.Apply(&e); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
	}
}

// BenchmarkApplySetData1KiB measures setData of 1 KiB on one of 10,000
// nodes.
func BenchmarkApplySetData1KiB(b *testing.B) {
	tr, paths := benchTree(b, 10000, 1024)
	data := make([]byte, 1024)
	e := txn.Entry{Session: sess, Time: 1, Op: setDataOp("", data, -1)}
	b.SetBytes(1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.Zxid = int64(100000 + i)
		e.Op.Path = paths[i%len(paths)]
		if r, _ := tr.Apply(&e); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
		i++
	}
}

// BenchmarkApplyMulti measures a multi of a check and a setData, the
// shape of an optimistic update.
func BenchmarkApplyMulti(b *testing.B) {
	tr, paths := benchTree(b, 1000, 128)
	e := txn.Entry{Session: sess, Time: 1, Op: multiOp(checkOp("", -1), setDataOp("", make([]byte, 128), -1))}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		e.Zxid = int64(100000 + i)
		p := paths[i%len(paths)]
		e.Op.Ops[0].Path, e.Op.Ops[1].Path = p, p
		if r, _ := tr.Apply(&e); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
		i++
	}
}

// BenchmarkGetData measures a read of a 1 KiB node with the ACL check.
func BenchmarkGetData(b *testing.B) {
	tr, paths := benchTree(b, 10000, 1024)
	ids := []zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, code := tr.GetData(paths[i%len(paths)], ids); code != zkproto.OK {
			b.Fatal(code)
		}
		i++
	}
}

// BenchmarkSnapshotRoundTrip measures writing and reading a snapshot of
// 10,000 nodes of 1 KiB.
func BenchmarkSnapshotRoundTrip(b *testing.B) {
	tr, _ := benchTree(b, 10000, 1024)
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := tr.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		if _, err := ReadSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
