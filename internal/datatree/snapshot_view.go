package datatree

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// A snapshot of a big tree takes long to serialize, and no reader or
// writer may wait that long. So a snapshot is a view: BeginSnapshot fixes
// the tree's state at that moment in O(ACL lists + sessions), and the
// SnapshotWriter serializes that state in chunks while the tree goes on
// changing between them. Every change of a node goes through beginChange,
// addNode or removeNode, which first preserve the node's state and
// children as the view saw them, unless the writer has already written
// the node (or the node is newer than the view). The writer reads a node
// through its preserved image when there is one, the live node otherwise:
// so it writes exactly the bytes WriteSnapshot would have written at
// BeginSnapshot.

// snapView is the state of a snapshot in progress.
type snapView struct {
	// gen marks the nodes the view needs no image of (written already,
	// preserved already, or added after the view): node.snapGen == gen.
	gen uint32
	pre map[*node]*preImage

	lastZxid int64
	digest   uint64
	nodes    int // nodes outside every section
	sessions []SessionInfo
	// sections are the section roots' names at the view, with their
	// subtrees' node counts and digests (the roots left out).
	sections        []string
	sectionNodes    []int
	sectionDigests  []uint64
	sets            []*aclSet
	encoded         map[*aclSet][]byte
	index           map[*aclSet]int32
	root            *node
	sectionRootNode []*node
}

// preImage is a node as the view saw it.
type preImage struct {
	state    nodeState
	children map[string]*node
}

// preserve records n's state and children for the snapshot in progress,
// if it needs them: called before anything about n changes.
func (t *Tree) preserve(n *node) {
	v := t.snap
	if v == nil || n.snapGen == v.gen {
		return
	}
	n.snapGen = v.gen
	v.pre[n] = &preImage{state: n.nodeState, children: maps.Clone(n.children)}
}

// ErrSnapshotInProgress is returned by BeginSnapshot while another
// snapshot of the tree is being written.
var ErrSnapshotInProgress = errors.New("datatree: a snapshot is being written")

// SnapshotWriter writes the tree as it was at BeginSnapshot.
type SnapshotWriter struct {
	t *Tree
	v *snapView
}

// BeginSnapshot fixes the tree's current state for a SnapshotWriter. The
// caller must hold the tree exclusively; the writer's Close must be
// called, exclusively too, when it is done (or abandoned).
func (t *Tree) BeginSnapshot() (*SnapshotWriter, error) {
	if t.snap != nil {
		return nil, ErrSnapshotInProgress
	}
	t.snapGens++
	if t.snapGens == 0 {
		t.snapGens++ // 0 is every node's mark before any snapshot
	}
	v := t.view()
	v.gen, v.pre = t.snapGens, map[*node]*preImage{}
	t.snap = v
	return &SnapshotWriter{t: t, v: v}, nil
}

// view captures what a snapshot holds besides the nodes.
func (t *Tree) view() *snapView {
	v := &snapView{lastZxid: t.lastZxid, digest: t.digest, sessions: t.Sessions(), root: t.nodes[rootPath]}
	// Number ACL lists by their encodings so the output is deterministic.
	v.sets = t.acls.all()
	v.encoded = make(map[*aclSet][]byte, len(v.sets))
	for _, s := range v.sets {
		e := zkproto.NewEncoder(nil)
		zkproto.EncodeACLs(e, s.list)
		v.encoded[s] = e.Bytes()
	}
	slices.SortFunc(v.sets, func(a, b *aclSet) int { return bytes.Compare(v.encoded[a], v.encoded[b]) })
	v.index = make(map[*aclSet]int32, len(v.sets))
	for i, s := range v.sets {
		v.index[s] = int32(i)
	}
	inSections := 0
	for _, name := range t.sections {
		root := t.nodes["/"+name]
		if root == nil {
			continue // absent: nothing to hold
		}
		top := t.tops[name]
		v.sections = append(v.sections, name)
		v.sectionNodes = append(v.sectionNodes, top.nodes-1)
		v.sectionDigests = append(v.sectionDigests, top.digest-root.digest)
		v.sectionRootNode = append(v.sectionRootNode, root)
		inSections += top.nodes - 1
	}
	v.nodes = len(t.nodes) - inSections
	return v
}

// WriteSnapshot writes the whole tree and session table to w. The tree must
// not change while it runs. (A SnapshotWriter in progress is not
// disturbed.)
func (t *Tree) WriteSnapshot(w io.Writer) error {
	return (&SnapshotWriter{t: t, v: t.view()}).WriteTo(w, nil)
}

// Close ends the snapshot, letting the tree change without preserving
// anything for it; closing again does nothing. The caller must hold the
// tree exclusively.
func (w *SnapshotWriter) Close() {
	if w.t.snap == w.v {
		w.t.snap = nil
	}
}

// snapChunk and snapChunkBytes bound the nodes, and the bytes, the writer
// serializes per hold of the lock, so that a writer waiting for the tree
// waits for at most that much.
var snapChunk = 1024

const snapChunkBytes = 1 << 20

// WriteTo writes the snapshot to out. lock, when not nil, is the read
// side of the lock that the tree's writers take exclusively (around
// Apply and Close): WriteTo holds it while it reads nodes, a chunk at a
// time. Without one, the tree must not change while WriteTo runs.
func (w *SnapshotWriter) WriteTo(out io.Writer, lock sync.Locker) error {
	if lock == nil {
		lock = noLock{}
	}
	v := w.v
	sw := &snapWriter{out: out, crc: crc32.New(crcTable), enc: zkproto.NewEncoder(nil)}
	sw.enc.String(snapMagic)
	if len(v.sections) == 0 {
		sw.enc.Int(snapVersion)
	} else {
		sw.enc.Int(snapVersionSections)
	}
	sw.frame()
	sw.enc.Long(v.lastZxid)
	sw.enc.Long(int64(v.digest))
	sw.enc.Int(int32(len(v.sets)))
	sw.enc.Long(int64(v.nodes))
	sw.enc.Int(int32(len(v.sessions)))
	if len(v.sections) > 0 {
		sw.enc.Int(int32(len(v.sections)))
	}
	sw.frame()
	for _, s := range v.sets {
		sw.write(binary.BigEndian.AppendUint32(nil, uint32(len(v.encoded[s]))))
		sw.write(v.encoded[s])
	}
	sw.drain()
	sectioned := make(map[*node]bool, len(v.sections))
	for _, r := range v.sectionRootNode {
		sectioned[r] = true
	}
	w.walk(sw, []walkItem{{rootPath, v.root}}, sectioned, lock)
	for _, si := range v.sessions {
		sw.enc.Long(si.ID)
		sw.enc.Int(si.Timeout)
		sw.enc.Buffer(si.Passwd)
		sw.frame()
	}
	for i, name := range v.sections {
		// The body's length goes in the section's header, before it: the
		// body is written aside first.
		var body bytes.Buffer
		bw := &snapWriter{out: &body, crc: crc32.New(crcTable), enc: zkproto.NewEncoder(nil)}
		root := v.sectionRootNode[i]
		lock.Lock()
		_, children := w.image(root, true)
		items := w.childItems("/"+name, children)
		lock.Unlock()
		w.walk(bw, items, nil, lock)
		if bw.err != nil {
			return bw.err
		}
		sw.enc.String(name)
		sw.enc.Long(int64(v.sectionNodes[i]))
		sw.enc.Long(int64(body.Len()))
		sw.enc.Long(int64(v.sectionDigests[i]))
		sw.frame()
		main := sw.crc
		sw.crc = nil
		sw.write(body.Bytes())
		sw.write(binary.BigEndian.AppendUint32(nil, bw.crc.Sum32()))
		sw.crc = main
		sw.drain()
	}
	sum := sw.crc.Sum32()
	sw.crc = nil
	sw.write(binary.BigEndian.AppendUint32(nil, sum))
	sw.drain()
	return sw.err
}

// walkItem is a node the walk has still to write, at path.
type walkItem struct {
	path string
	n    *node
}

// walk writes the nodes of stack (the last first) and their descendants,
// parents before children, children by name, in chunks under lock; it
// does not descend below the nodes in stop.
func (w *SnapshotWriter) walk(sw *snapWriter, stack []walkItem, stop map[*node]bool, lock sync.Locker) {
	for len(stack) > 0 && sw.err == nil {
		lock.Lock()
		for k := 0; k < snapChunk && len(stack) > 0 && sw.pending.Len() < snapChunkBytes; k++ {
			it := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			// A section root is left unmarked here: its section, written
			// later, reads its children as the view saw them.
			state, children := w.image(it.n, !stop[it.n])
			enc := sw.enc
			enc.String(it.path)
			enc.Buffer(state.data)
			enc.Int(w.v.index[state.acl])
			enc.Long(state.czxid)
			enc.Long(state.mzxid)
			enc.Long(state.pzxid)
			enc.Long(state.ctime)
			enc.Long(state.mtime)
			enc.Long(state.owner)
			enc.Int(state.version)
			enc.Int(state.cversion)
			enc.Int(state.aversion)
			sw.frame()
			if stop[it.n] {
				continue
			}
			items := w.childItems(it.path, children)
			slices.Reverse(items)
			stack = append(stack, items...)
		}
		lock.Unlock()
		sw.drain()
	}
}

// image returns n's state and children as the view saw them and, with
// mark, marks n written: the view needs no image of it from now on. The
// tree's lock is held (either side).
func (w *SnapshotWriter) image(n *node, mark bool) (*nodeState, map[string]*node) {
	if w.v.pre == nil {
		return &n.nodeState, n.children // WriteSnapshot's: the tree stands still
	}
	if p := w.v.pre[n]; p != nil {
		return &p.state, p.children
	}
	if mark {
		n.snapGen = w.v.gen
	}
	return &n.nodeState, n.children
}

// childItems lists children, under parent path, by name.
func (w *SnapshotWriter) childItems(path string, children map[string]*node) []walkItem {
	prefix := path
	if path != rootPath {
		prefix += "/"
	}
	items := make([]walkItem, 0, len(children))
	for _, name := range slices.Sorted(maps.Keys(children)) {
		items = append(items, walkItem{prefix + name, children[name]})
	}
	return items
}

// noLock is the lock of a tree that does not change during a snapshot.
type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}
