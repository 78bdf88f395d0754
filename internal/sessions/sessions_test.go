package sessions

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_000_000, 0)

func TestTrackerExpiresSilentSessionsOnce(t *testing.T) {
	tr := NewTracker(3, t0)
	tr.Add(1, time.Second, t0)
	tr.Add(2, 2*time.Second, t0)
	if got := tr.Expired(t0.Add(time.Second)); len(got) != 0 {
		t.Fatalf("expired at its deadline (not after it): %v", got)
	}
	tr.Touch(1, t0.Add(500*time.Millisecond))
	if got := tr.Expired(t0.Add(1600 * time.Millisecond)); len(got) != 1 || got[0] != 1 {
		t.Fatalf("Expired = %v, want [1] (touched at 0.5 s, timeout 1 s)", got)
	}
	if got := tr.Expired(t0.Add(3 * time.Second)); !slices.Equal(got, []int64{2}) {
		t.Fatalf("Expired = %v, want [2]: 1 is already closing", got)
	}
	if tr.Touch(1, t0.Add(3*time.Second)) {
		t.Fatal("a closing session was touched")
	}
	tr.UnmarkClosing(1)
	if !tr.Touch(1, t0.Add(3*time.Second)) {
		t.Fatal("a session whose close was abandoned cannot be touched")
	}
	tr.Remove(2)
	if tr.Count() != 1 || tr.TimeoutOf(2) != 0 || tr.TimeoutOf(1) != time.Second {
		t.Fatalf("Count %d, timeouts %v %v", tr.Count(), tr.TimeoutOf(1), tr.TimeoutOf(2))
	}
}

func TestTrackerIDsCarryTheServer(t *testing.T) {
	a, _ := NewTracker(3, t0).NewSession()
	b, pw := NewTracker(4, t0).NewSession()
	if a>>56 != 3 || b>>56 != 4 || a&(1<<56-1) != b&(1<<56-1) || len(pw) != 16 {
		t.Fatalf("ids %x %x", a, b)
	}
}

func TestExpiryWaitsAPeriodAfterItBeginsToLead(t *testing.T) {
	tr := NewTracker(1, t0)
	tr.Add(7, time.Second, t0)
	var x Expiry
	lead := func(epoch, commit, applied uint64) Status {
		return Status{Leader: true, Epoch: epoch, Commit: commit, Applied: applied}
	}
	at := t0.Add(5 * time.Second) // long past 7's deadline as first set
	if x.Due(tr, at, Status{Epoch: 1}) {
		t.Fatal("a follower expires")
	}
	if x.Due(tr, at, lead(1, 10, 10)) {
		t.Fatal("due in the first period of leading")
	}
	if got := tr.Expired(at.Add(time.Second)); len(got) != 0 {
		t.Fatalf("clocks did not restart when it began to lead: %v", got)
	}
	if x.Due(tr, at, lead(1, 20, 9)) {
		t.Fatal("due while an entry known committed a period ago is not applied")
	}
	if !x.Due(tr, at, lead(1, 20, 20)) {
		t.Fatal("not due after a period of leading with everything applied")
	}
	if x.Due(tr, at, lead(2, 20, 20)) {
		t.Fatal("due at once in a new epoch")
	}
}

func TestGuardServesWithinTheBoundOfItsNewestCommittedTouch(t *testing.T) {
	g := NewGuard()
	if ok, _ := g.Serving(time.Second, time.Second); ok {
		t.Fatal("serves without proof")
	}
	g.Proposed(1, 1, 100*time.Millisecond)
	g.Proposed(1, 2, 200*time.Millisecond)
	g.Proposed(1, 3, 300*time.Millisecond)
	g.Committed(1, 2)
	if p, ok := g.Proof(); !ok || p != 200*time.Millisecond {
		t.Fatalf("proof %v %v, want 200ms", p, ok)
	}
	g.Committed(1, 1) // older than the proof, and forgotten
	if p, _ := g.Proof(); p != 200*time.Millisecond {
		t.Fatalf("an older touch moved the proof to %v", p)
	}
	if ok, why := g.Serving(499*time.Millisecond, 300*time.Millisecond); !ok {
		t.Fatalf("not serving within the bound: %s", why)
	}
	if ok, _ := g.Serving(500*time.Millisecond, 300*time.Millisecond); ok {
		t.Fatal("serving at the bound")
	}
	g.Committed(1, 3)
	if ok, _ := g.Serving(500*time.Millisecond, 300*time.Millisecond); !ok {
		t.Fatal("a newer touch did not renew the proof")
	}
}

func TestTouchListedTouchesWhatATouchLists(t *testing.T) {
	tr := NewTracker(1, t0)
	tr.Add(1, time.Second, t0)
	tr.Add(2, time.Second, t0)
	tr.TouchListed(AppendTouch(nil, []int64{2}), t0.Add(800*time.Millisecond))
	if got := tr.Expired(t0.Add(1500 * time.Millisecond)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Expired = %v, want [1]: 2 was listed", got)
	}
}

// TestTouchEncodingRoundTrips: every listed session is touched and no
// other, whatever the ids (ZooKeeper's ids of servers over 127 have the
// top bit set), and a server's own sessions cost about a byte each.
func TestTouchEncodingRoundTrips(t *testing.T) {
	base := int64(5)<<56 | int64(0x1234567)<<24
	var mine []int64
	for i := range 1000 {
		mine = append(mine, base+int64(i))
	}
	ids := append(slices.Clone(mine), -1, -1<<63, 0x7fffffffffffffff, -int64(56)<<56+3, 1)
	tr := NewTracker(1, t0)
	for _, id := range ids {
		tr.Add(id, time.Second, t0)
	}
	tr.Add(42, time.Second, t0) // not listed
	b := AppendTouch(nil, slices.Clone(ids))
	tr.TouchListed(b, t0.Add(800*time.Millisecond))
	if got := tr.Expired(t0.Add(1500 * time.Millisecond)); !slices.Equal(got, []int64{42}) {
		t.Fatalf("Expired = %v, want [42]", got)
	}
	if n := len(AppendTouch(nil, slices.Clone(mine))); n > 1000+16 {
		t.Fatalf("1000 sessions of one server take %d bytes", n)
	}
	// The earlier encoding, 8 bytes per id, still reads.
	var fixed []byte
	for _, id := range ids {
		fixed = binary.BigEndian.AppendUint64(fixed, uint64(id))
	}
	tr2 := NewTracker(1, t0)
	tr2.Add(ids[0], time.Second, t0)
	tr2.Add(42, time.Second, t0)
	tr2.TouchListedFixed(fixed, t0.Add(800*time.Millisecond))
	if got := tr2.Expired(t0.Add(1500 * time.Millisecond)); !slices.Equal(got, []int64{42}) {
		t.Fatalf("fixed: Expired = %v, want [42]", got)
	}
}

// FuzzTouchListed: any body decodes without panicking, and an encoding
// touches exactly what it lists.
func FuzzTouchListed(f *testing.F) {
	f.Add([]byte{}, []byte{1, 2, 3})
	f.Add(AppendTouch(nil, []int64{-1, 7, 1 << 40}), []byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, body, seed []byte) {
		tr := NewTracker(1, t0)
		tr.TouchListed(body, t0)
		var ids []int64
		for i := 0; i+8 <= len(seed); i += 8 {
			ids = append(ids, int64(binary.BigEndian.Uint64(seed[i:])))
		}
		for _, id := range ids {
			tr.Add(id, time.Second, t0)
		}
		tr.TouchListed(AppendTouch(nil, slices.Clone(ids)), t0.Add(900*time.Millisecond))
		if got := tr.Expired(t0.Add(1500 * time.Millisecond)); len(got) != 0 {
			t.Fatalf("listed sessions expired: %v", got)
		}
	})
}

// TestTouchExtendsASessionBeingClosed: a touch of a session whose expiry
// is in flight reports it closing but extends it, so that when that
// expiry is refused (a later move of the session) the next round counts
// from the touch, not from the deadline the refused expiry was decided on.
func TestTouchExtendsASessionBeingClosed(t *testing.T) {
	tr := NewTracker(1, t0)
	tr.Add(1, time.Second, t0)
	if got := tr.Expired(t0.Add(1100 * time.Millisecond)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Expired = %v, want [1]", got)
	}
	if tr.Touch(1, t0.Add(1200*time.Millisecond)) {
		t.Fatal("a session being closed touched as live")
	}
	tr.TouchListed(AppendTouch(nil, []int64{1}), t0.Add(1300*time.Millisecond))
	tr.UnmarkClosing(1) // the expiry was refused
	if got := tr.Expired(t0.Add(2200 * time.Millisecond)); len(got) != 0 {
		t.Fatalf("Expired = %v 900 ms after a touch of a 1 s session", got)
	}
	if got := tr.Expired(t0.Add(2400 * time.Millisecond)); !slices.Equal(got, []int64{1}) {
		t.Fatalf("Expired = %v, want [1] once the touch's second has passed", got)
	}
}
