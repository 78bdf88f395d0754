package datatree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// sectionedTree is a random tree with sections for every top-level name it
// has, bar one, and for a name it does not have.
func sectionedTree(t *testing.T, seed uint64) (*Tree, []string) {
	t.Helper()
	tr := New()
	for _, e := range randomEntries(seed, 1, 600) {
		tr.Apply(&e)
	}
	var names []string
	for _, s := range tr.Subtrees() {
		if s.Name != "" {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	if len(names) < 2 {
		t.Fatalf("seed %d: top-level names %v, want at least two", seed, names)
	}
	sections := append(slices.Clone(names[1:]), "absent")
	tr.SetSnapshotSections(sections)
	return tr, names[1:]
}

// TestSnapshotSectionsRoundTrip: a tree with sections writes version 2,
// reads back to the same tree, and writes the same bytes again; without
// sections it writes version 1.
func TestSnapshotSectionsRoundTrip(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		tr, _ := sectionedTree(t, seed)
		b := snapshotBytes(t, tr)
		if v := binary.BigEndian.Uint32(b[4+4+len(snapMagic):]); v != snapVersionSections {
			t.Fatalf("seed %d: version %d, want %d", seed, v, snapVersionSections)
		}
		got, err := ReadSnapshot(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkInvariants(t, got)
		if got.Digest() != tr.Digest() || dump(got) != dump(tr) {
			t.Fatalf("seed %d: the tree read back differs", seed)
		}
		again, damaged, err := ReadSnapshotSections(bytes.NewReader(b))
		if err != nil || len(damaged) != 0 || dump(again) != dump(tr) {
			t.Fatalf("seed %d: ReadSnapshotSections: damaged %v, err %v", seed, damaged, err)
		}
		if !bytes.Equal(snapshotBytes(t, got), b) {
			t.Fatalf("seed %d: the tree read back writes other bytes", seed)
		}
		got.SetSnapshotSections(nil)
		if v := binary.BigEndian.Uint32(snapshotBytes(t, got)[4+4+len(snapMagic):]); v != snapVersion {
			t.Fatalf("seed %d: without sections, version %d", seed, v)
		}
	}
}

// TestSnapshotSectionDamageIsContained flips bytes inside one section's
// nodes (their data, their length prefix, their path): ReadSnapshot
// refuses the snapshot, ReadSnapshotSections loads everything else, leaves
// the section's root in place without its descendants, and names the
// section. Damage outside the sections fails both.
func TestSnapshotSectionDamageIsContained(t *testing.T) {
	for seed := uint64(0); seed < 6; seed++ {
		tr, sections := sectionedTree(t, seed)
		b := snapshotBytes(t, tr)
		var spans []NodeSpan
		if err := SnapshotNodeSpans(bytes.NewReader(b), func(s NodeSpan) error {
			spans = append(spans, s)
			return nil
		}); err != nil {
			t.Fatalf("seed %d: spans: %v", seed, err)
		}
		if len(spans) != tr.NodeCount() {
			t.Fatalf("seed %d: %d spans of %d nodes", seed, len(spans), tr.NodeCount())
		}
		for _, s := range spans {
			section := ""
			for _, name := range sections {
				if strings.HasPrefix(s.Path, "/"+name+"/") {
					section = name
				}
			}
			for _, at := range []int64{s.RecordOff - 1, s.RecordOff + 5, s.DataOff + s.DataLen - 1, s.RecordOff + s.RecordLen - 1} {
				if at < s.RecordOff-4 || at == s.DataOff-1 && s.DataLen == 0 {
					continue
				}
				damaged := bytes.Clone(b)
				damaged[at] ^= 0x20
				_, err := ReadSnapshot(bytes.NewReader(damaged))
				if !errors.Is(err, ErrBadSnapshot) {
					t.Fatalf("seed %d: flip at %d in %s: ReadSnapshot: %v", seed, at, s.Path, err)
				}
				got, names, err := ReadSnapshotSections(bytes.NewReader(damaged))
				if section == "" {
					if !errors.Is(err, ErrBadSnapshot) {
						t.Fatalf("seed %d: flip at %d in %s, outside the sections: ReadSnapshotSections: %v", seed, at, s.Path, err)
					}
					continue
				}
				if err != nil || !slices.Equal(names, []string{section}) {
					t.Fatalf("seed %d: flip at %d in %s: damaged %v, err %v", seed, at, s.Path, names, err)
				}
				checkInvariants(t, got)
				wantSectionGone(t, tr, got, section)
			}
		}
	}
}

// wantSectionGone checks that got is want without the descendants of
// /section.
func wantSectionGone(t *testing.T, want, got *Tree, section string) {
	t.Helper()
	info, _ := want.Subtree(section)
	if got.NodeCount() != want.NodeCount()-(info.Nodes-1) {
		t.Fatalf("/%s damaged: %d nodes, want %d", section, got.NodeCount(), want.NodeCount()-(info.Nodes-1))
	}
	if kids, _, code := got.Children("/"+section, []zkproto.Id{{Scheme: "super"}}); code != zkproto.OK || len(kids) != 0 {
		t.Fatalf("/%s damaged: its root answers %v with children %v", section, code, kids)
	}
	for _, s := range want.Subtrees() {
		if s.Name == section {
			continue
		}
		if g, ok := got.Subtree(s.Name); !ok || g.Digest != s.Digest || g.Nodes != s.Nodes {
			t.Fatalf("/%s damaged: subtree %q is %+v, want %+v", section, s.Name, g, s)
		}
	}
}
