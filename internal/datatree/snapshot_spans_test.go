package datatree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestSnapshotNodeSpans: every node of a snapshot is reported once, in
// order, with its mzxid, and its spans hold its record and its data:
// the record is exactly what the frame's length prefix announces, and
// flipping a byte of a node's data changes that node's data alone.
func TestSnapshotNodeSpans(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		entries := randomEntries(seed, 1, 500)
		tr := New()
		for i := range entries {
			tr.Apply(&entries[i])
		}
		snap := snapshotBytes(t, tr)
		var spans []NodeSpan
		if err := SnapshotNodeSpans(bytes.NewReader(snap), func(s NodeSpan) error {
			spans = append(spans, s)
			return nil
		}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(spans) != tr.NodeCount() || spans[0].Path != "/" {
			t.Fatalf("seed %d: %d spans from %q, %d nodes", seed, len(spans), spans[0].Path, tr.NodeCount())
		}
		prevEnd := int64(0)
		for _, s := range spans {
			data, st, code := tr.GetData(s.Path, []zkproto.Id{{Scheme: "super"}})
			if code != zkproto.OK {
				t.Fatalf("seed %d: span of %q, which GetData answers %v", seed, s.Path, code)
			}
			if s.Mzxid != st.Mzxid {
				t.Fatalf("seed %d: %q mzxid %#x, stat says %#x", seed, s.Path, s.Mzxid, st.Mzxid)
			}
			if s.RecordOff < prevEnd+4 || int64(binary.BigEndian.Uint32(snap[s.RecordOff-4:])) != s.RecordLen {
				t.Fatalf("seed %d: %q record at %d+%d does not follow its frame's length", seed, s.Path, s.RecordOff, s.RecordLen)
			}
			prevEnd = s.RecordOff + s.RecordLen
			if s.DataOff < s.RecordOff || s.DataOff+s.DataLen > prevEnd ||
				!bytes.Equal(snap[s.DataOff:s.DataOff+s.DataLen], data) {
				t.Fatalf("seed %d: %q data span %d+%d does not hold its data", seed, s.Path, s.DataOff, s.DataLen)
			}
		}
	}
}

// TestSnapshotNodeSpansChecks: a damaged snapshot is refused with
// ErrBadSnapshot, and fn's error comes back as is.
func TestSnapshotNodeSpansChecks(t *testing.T) {
	h := newHarness(t)
	h.session(sess)
	h.must(txn.Entry{Session: sess, Op: createOp("/a", []byte("0123456789"), 0)})
	snap := snapshotBytes(t, h.tree)
	var a NodeSpan
	SnapshotNodeSpans(bytes.NewReader(snap), func(s NodeSpan) error {
		if s.Path == "/a" {
			a = s
		}
		return nil
	})
	if a.DataLen != 10 {
		t.Fatalf("span of /a: %+v", a)
	}
	damaged := bytes.Clone(snap)
	damaged[a.DataOff+3] ^= 0x40
	if err := SnapshotNodeSpans(bytes.NewReader(damaged), func(NodeSpan) error { return nil }); !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("a flipped data byte: %v", err)
	}
	stop := errors.New("stop")
	if err := SnapshotNodeSpans(bytes.NewReader(snap), func(NodeSpan) error { return stop }); err != stop {
		t.Fatalf("fn's error: %v", err)
	}
}
