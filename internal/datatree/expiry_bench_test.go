package datatree

import (
	"strconv"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// BenchmarkCloseSessionTenEphemerals measures the expiry of a session
// holding 10 ephemerals under a parent of 100,000 children, as a mass
// expiry of 10,000 such sessions applies it on every server.
func BenchmarkCloseSessionTenEphemerals(b *testing.B) {
	const sessions = 10000
	var tr *Tree
	var zxid int64
	b.ReportAllocs()
	for i := range b.N {
		if i%sessions == 0 {
			// Every session of the tree has expired: build another.
			b.StopTimer()
			tr, zxid = expiringTree(b, sessions)
			b.StartTimer()
		}
		if r, _ := tr.Apply(&txn.Entry{Zxid: zxid, Session: int64(1000 + i%sessions), Op: txn.Op{Kind: txn.KindCloseSession}}); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
		zxid++
	}
}

// expiringTree returns a tree of n sessions, 1000 to 1000+n-1, each with
// 10 ephemerals under /e, and the zxid to apply next.
func expiringTree(b *testing.B, n int) (*Tree, int64) {
	tr := New()
	tr.Apply(&txn.Entry{Zxid: 1, Session: sess, Op: txn.Op{Kind: txn.KindCreateSession}})
	tr.Apply(&txn.Entry{Zxid: 2, Session: sess, Op: createOp("/e", nil, 0)})
	zxid := int64(3)
	for s := range n {
		id := int64(1000 + s)
		tr.Apply(&txn.Entry{Zxid: zxid, Session: id, Timeout: 10000, Op: txn.Op{Kind: txn.KindCreateSession}})
		zxid++
		for k := range 10 {
			p := "/e/s" + strconv.Itoa(s) + "-" + strconv.Itoa(k)
			if r, _ := tr.Apply(&txn.Entry{Zxid: zxid, Session: id, Op: createOp(p, nil, zkproto.ModeEphemeral)}); r.Err != zkproto.OK {
				b.Fatal(r.Err)
			}
			zxid++
		}
	}
	return tr, zxid
}
