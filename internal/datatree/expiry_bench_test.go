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
	tr := New()
	tr.Apply(&txn.Entry{Zxid: 1, Session: sess, Op: txn.Op{Kind: txn.KindCreateSession}})
	tr.Apply(&txn.Entry{Zxid: 2, Session: sess, Op: createOp("/e", nil, 0)})
	zxid := int64(3)
	const sessions = 10000
	ids := make([]int64, 0, sessions)
	for s := range sessions {
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
		ids = append(ids, id)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i == sessions {
			b.StopTimer()
			break
		}
		if r, _ := tr.Apply(&txn.Entry{Zxid: zxid, Session: ids[i], Op: txn.Op{Kind: txn.KindCloseSession}}); r.Err != zkproto.OK {
			b.Fatal(r.Err)
		}
		zxid++
	}
}
