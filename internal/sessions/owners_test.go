package sessions

import (
	"testing"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestOwnersRoundTrip: the owner table survives its snapshot encoding, a
// snapshot without one reads as empty, and bad tables are refused.
func TestOwnersRoundTrip(t *testing.T) {
	o := NewOwners()
	for id, owner := range map[int64]gpaxos.ID{1 << 56: 3, 5: 1, 1<<62 + 7: 250} {
		o.Track(&txn.Entry{Session: id, Op: txn.Op{Kind: txn.KindCreateSession}}, txn.Result{}, owner)
	}
	o.Move(5, 1, 2, true, 0x300000009)
	data := append(o.AppendTo(nil), "tree"...)
	got, rest, err := SplitOwners(data)
	if err != nil || string(rest) != "tree" || got.Len() != 3 || got.Of(5) != 2 || got.Of(1<<56) != 3 || got.Of(1<<62+7) != 250 {
		t.Fatalf("got %v %q %v", got, rest, err)
	}
	if got.moved[5] != 0x300000009 || len(got.moved) != 1 {
		t.Fatalf("moves: %v", got.moved)
	}
	// A table written without the moves' zxids reads as one without moves.
	v1 := append([]byte("GSO1\x01"), 0, 0, 0, 0, 0, 0, 0, 5, 2)
	if got, rest, err := SplitOwners(append(v1, "tree"...)); err != nil || string(rest) != "tree" || got.Of(5) != 2 || len(got.moved) != 0 {
		t.Fatalf("first format: %v %q %v", got, rest, err)
	}
	if got, rest, err := SplitOwners([]byte("tree")); err != nil || got.Len() != 0 || string(rest) != "tree" {
		t.Fatalf("no table: %v %q %v", got, rest, err)
	}
	for _, bad := range [][]byte{[]byte("GSO1"), []byte("GSO1\x05"), append([]byte("GSO1\x01"), 1, 2, 3),
		append([]byte("GSO2\x01"), 0, 0, 0, 0, 0, 0, 0, 5, 2)} {
		if _, _, err := SplitOwners(bad); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
}

// TestOwnersFenceTheOldServer: after a move, writes of the session from
// the server it left are refused, a late move proposed under the old owner
// fails, and a move of an ended session says so.
func TestOwnersFenceTheOldServer(t *testing.T) {
	o := NewOwners()
	create := &txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindCreateSession}}
	o.Track(create, txn.Result{}, 1)
	write := &txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindSetData, Path: "/a"}}
	if o.MovedAway(write, 1) {
		t.Fatal("the creator's write refused")
	}
	if code := o.Move(9, 1, 2, true, 0x100000005); code != zkproto.OK || o.Of(9) != 2 {
		t.Fatalf("move: %v, owner %d", code, o.Of(9))
	}
	if !o.MovedAway(write, 1) || o.MovedAway(write, 2) {
		t.Fatal("writes not fenced to the new owner")
	}
	if o.MovedAway(&txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindCloseSession}}, 3) {
		t.Fatal("an expiry proposed elsewhere refused")
	}
	if code := o.Move(9, 1, 3, true, 0x100000006); code != zkproto.ErrSessionMoved || o.Of(9) != 2 {
		t.Fatalf("late move: %v, owner %d", code, o.Of(9))
	}
	if code := o.Move(9, 2, 3, false, 0x100000007); code != zkproto.ErrSessionExpired {
		t.Fatalf("move of an ended session: %v", code)
	}
	b := AppendMove([]byte{4}, 9, 2)
	if id, from, ok := ParseMove(b[1:]); !ok || id != 9 || from != 2 {
		t.Fatalf("ParseMove: %d %d %v", id, from, ok)
	}
	o.Track(&txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindCloseSession}}, txn.Result{}, 5)
	if o.Len() != 0 {
		t.Fatal("a closed session keeps its owner")
	}
}

// TestExpiryCountsOnlyInItsEpochAndBeforeAMove: an expiry takes effect in
// the epoch it was decided in, unless a move of the session the leader had
// not applied when it decided comes before it in the log.
func TestExpiryCountsOnlyInItsEpochAndBeforeAMove(t *testing.T) {
	o := NewOwners()
	o.Track(&txn.Entry{Session: 9, Op: txn.Op{Kind: txn.KindCreateSession}}, txn.Result{}, 1)
	const e3, e4 = 3 << 32, 4 << 32
	if !o.ExpiryCounts(9, e3+10, e3+12) {
		t.Fatal("an expiry of its own epoch refused")
	}
	if o.ExpiryCounts(9, e3+10, e4+1) {
		t.Fatal("a deposed leader's expiry counted in the next epoch")
	}
	o.Move(9, 1, 2, true, e3+11)
	if o.ExpiryCounts(9, e3+10, e3+12) {
		t.Fatal("an expiry counted after a move the leader had not applied when deciding")
	}
	if !o.ExpiryCounts(9, e3+11, e3+14) || !o.ExpiryCounts(9, e3+13, e3+14) {
		t.Fatal("an expiry decided after applying the move refused")
	}
	if o.ExpiryCounts(10, e3+1, e3+2) != true {
		t.Fatal("a session never moved: its expiry refused")
	}
}
