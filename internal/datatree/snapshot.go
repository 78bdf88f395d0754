package datatree

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Snapshot format. A snapshot is a sequence of frames, each a 4-byte
// big-endian length and a jute-encoded payload. Version 1:
//
//	magic    "GIRAFFE-TREE" and the format version (an int)
//	header   lastZxid, digest, then the counts of ACL lists, nodes, sessions
//	acls     one frame per distinct ACL list, sorted by encoding
//	nodes    one frame per node, parents before children, children by name:
//	         path, data (null kept), ACL index, the stored stat fields
//	sessions one frame per session, by id: id, timeout, password
//	trailer  the CRC-32C of every byte before it
//
// Version 2, written when the tree has sections (SetSnapshotSections: a
// server's declared namespaces), gives each section's subtree a checksum of
// its own, so that damage inside one is found there and the rest of the
// snapshot still loads (ReadSnapshotSections):
//
//	header   as in version 1, the node count that of the nodes outside
//	         every section, then the number of sections
//	acls, nodes (every node but a section root's descendants; the roots
//	         are here), sessions: as in version 1
//	then per section, by name:
//	  section  name, node count, body length in bytes, digest of its nodes
//	  body     one node frame per descendant of /name, as above
//	  checksum the CRC-32C of the body (4 bytes, no frame)
//	trailer  the CRC-32C of every byte before it but the sections' bodies
//	         and checksums
//
// The same tree always gives the same bytes. ReadSnapshot rebuilds every
// index and the digest from the nodes and sessions and refuses a snapshot
// whose digest or checksum does not match, so a damaged or misread snapshot
// is never loaded silently.
const (
	snapMagic = "GIRAFFE-TREE"
	// snapVersion is the format without sections, snapVersionSections the
	// one with.
	snapVersion         = 1
	snapVersionSections = 2
	// maxFrame bounds one frame: a node's data is limited by the server's
	// maximum packet size, far below this.
	maxFrame = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is wrapped by every error ReadSnapshot returns for a
// snapshot that is malformed, as opposed to one it could not read.
var ErrBadSnapshot = errors.New("datatree: bad snapshot")

// snapWriter frames payloads and checksums everything written. It gathers
// what it writes in pending, which drain hands to out: a snapshot taken
// while the tree changes encodes under the tree's lock and writes out of
// it.
type snapWriter struct {
	out     io.Writer
	pending bytes.Buffer
	// crc sums what is written (nil: nothing); n counts it.
	crc hash.Hash32
	n   int64
	enc *zkproto.Encoder
	err error
}

func (sw *snapWriter) frame() {
	if sw.err != nil {
		return
	}
	payload := sw.enc.Bytes()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(payload)))
	sw.write(l[:])
	sw.write(payload)
	sw.enc.Reset()
}

func (sw *snapWriter) write(b []byte) {
	if sw.err != nil {
		return
	}
	if sw.crc != nil {
		_, _ = sw.crc.Write(b)
	}
	sw.n += int64(len(b))
	sw.pending.Write(b)
}

// drain writes what is pending to out.
func (sw *snapWriter) drain() {
	if sw.err == nil && sw.pending.Len() > 0 {
		_, sw.err = sw.out.Write(sw.pending.Bytes())
	}
	sw.pending.Reset()
}

// SetSnapshotSections names the top-level znodes whose subtrees
// WriteSnapshot gives sections of their own (format version 2); none, the
// default, writes version 1.
func (t *Tree) SetSnapshotSections(names []string) {
	t.sections = slices.Compact(slices.Sorted(slices.Values(names)))
	t.sections = slices.DeleteFunc(t.sections, func(name string) bool { return name == "" || strings.Contains(name, "/") })
}

// nodeFrameSize is the size of a node's frame as walk writes it: the length
// prefix, the path and the data (each a length and its bytes), the ACL
// index, six longs and three ints of stat.
func nodeFrameSize(path string, data []byte) int64 {
	return 4 + 4 + int64(len(path)) + 4 + int64(len(data)) + 4 + 6*8 + 3*4
}

// snapReader reads frames and checksums everything read.
type snapReader struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf []byte
	// off counts the bytes read: where the next frame starts.
	off int64
}

// next returns a decoder over the next frame's payload (valid until the
// following call).
func (sr *snapReader) next(what string) (*zkproto.Decoder, error) {
	var l [4]byte
	if _, err := io.ReadFull(sr.r, l[:]); err != nil {
		return nil, sr.readErr(what, err)
	}
	_, _ = sr.crc.Write(l[:])
	sr.off += int64(len(l))
	n := binary.BigEndian.Uint32(l[:])
	if n > maxFrame {
		return nil, fmt.Errorf("%w: %s frame of %d bytes", ErrBadSnapshot, what, n)
	}
	// Grow the buffer as bytes arrive rather than trusting the length, so
	// a corrupt length cannot make us allocate more than the input holds.
	sr.buf = sr.buf[:0]
	for remaining := int(n); remaining > 0; {
		chunk := min(remaining, 1<<20)
		start := len(sr.buf)
		sr.buf = slices.Grow(sr.buf, chunk)[:start+chunk]
		if _, err := io.ReadFull(sr.r, sr.buf[start:]); err != nil {
			return nil, sr.readErr(what, err)
		}
		remaining -= chunk
	}
	sr.off += int64(n)
	_, _ = sr.crc.Write(sr.buf)
	return zkproto.NewDecoder(sr.buf), nil
}

func (sr *snapReader) readErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated in %s", ErrBadSnapshot, what)
	}
	return err
}

// done checks that a frame was consumed exactly.
func done(d *zkproto.Decoder, what string) error {
	if err := d.Err(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrBadSnapshot, what, err)
	}
	if d.Remaining() != 0 {
		return fmt.Errorf("%w: %s: %d trailing bytes", ErrBadSnapshot, what, d.Remaining())
	}
	return nil
}

// ReadSnapshot reads a snapshot written by WriteSnapshot. Errors about the
// snapshot's content wrap ErrBadSnapshot; errors of r are returned as they
// are. The tree keeps the snapshot's sections (SetSnapshotSections).
func ReadSnapshot(r io.Reader) (*Tree, error) {
	t, _, err := readSnapshot(r, false)
	return t, err
}

// ReadSnapshotSections is ReadSnapshot for a snapshot with sections that
// may be damaged: a section whose checksum or content fails is left out,
// and named in damaged (its root, outside it, is kept), while the rest of
// the snapshot must be intact as ReadSnapshot demands. The tree then lacks
// the damaged sections' nodes: its owner must keep them out of service.
func ReadSnapshotSections(r io.Reader) (t *Tree, damaged []string, err error) {
	return readSnapshot(r, true)
}

func readSnapshot(r io.Reader, tolerant bool) (*Tree, []string, error) {
	sr := &snapReader{r: bufio.NewReaderSize(r, 64<<10), crc: crc32.New(crcTable)}
	h, err := sr.header()
	if err != nil {
		return nil, nil, err
	}

	t := newEmpty()
	t.lastZxid = h.lastZxid
	var d *zkproto.Decoder
	// Each list is acquired once here to keep it alive while nodes are
	// read, and released at the end, so lists no node uses are dropped.
	sets := make([]*aclSet, 0, min(int(h.nACL), 1<<16))
	for i := int32(0); i < h.nACL; i++ {
		if d, err = sr.next("acl"); err != nil {
			return nil, nil, err
		}
		list := zkproto.DecodeACLs(d)
		if err := done(d, "acl"); err != nil {
			return nil, nil, err
		}
		if list == nil {
			return nil, nil, fmt.Errorf("%w: null ACL list %d", ErrBadSnapshot, i)
		}
		s := t.acls.acquire(list)
		if s.refs != 1 {
			return nil, nil, fmt.Errorf("%w: ACL list %d repeated", ErrBadSnapshot, i)
		}
		sets = append(sets, s)
	}
	defer func() {
		for _, s := range sets {
			t.acls.release(s)
		}
	}()

	for i := int64(0); i < h.nNodes; i++ {
		if d, err = sr.next("node"); err != nil {
			return nil, nil, err
		}
		rec, err := decodeNode(d, len(sets))
		if err != nil {
			return nil, nil, err
		}
		if err := t.linkNode(rec, sets, i == 0); err != nil {
			return nil, nil, err
		}
	}

	prev := int64(0)
	for i := int32(0); i < h.nSessions; i++ {
		if d, err = sr.next("session"); err != nil {
			return nil, nil, err
		}
		id, timeout, passwd := d.Long(), d.Int(), d.Buffer()
		if err := done(d, "session"); err != nil {
			return nil, nil, err
		}
		if (i > 0 && id <= prev) || !validSessionID(id) {
			return nil, nil, fmt.Errorf("%w: session %#x out of order or invalid", ErrBadSnapshot, id)
		}
		prev = id
		s := &session{timeout: timeout, passwd: passwd, digest: sessionDigest(id, timeout, passwd)}
		t.sessions[id] = s
		t.digest += s.digest
	}

	var damaged []string
	wantDigest := h.digest
	prevName := ""
	for i := int32(0); i < h.nSections; i++ {
		sh, err := sr.sectionHeader()
		if err != nil {
			return nil, nil, err
		}
		if i > 0 && sh.name <= prevName || t.nodes["/"+sh.name] == nil {
			return nil, nil, fmt.Errorf("%w: section %q out of order or without its root", ErrBadSnapshot, sh.name)
		}
		prevName = sh.name
		t.sections = append(t.sections, sh.name)
		recs, why, err := sr.section(sh, len(sets))
		if err != nil {
			return nil, nil, err
		}
		if why == "" {
			why = t.linkSection(sh, recs, sets)
		}
		if why != "" {
			if !tolerant {
				return nil, nil, fmt.Errorf("%w: section /%s: %s", ErrBadSnapshot, sh.name, why)
			}
			damaged = append(damaged, sh.name)
			wantDigest -= sh.digest
		}
	}

	if err := sr.trailer(); err != nil {
		return nil, nil, err
	}
	if t.digest != wantDigest {
		return nil, nil, fmt.Errorf("%w: digest %#x, header says %#x", ErrBadSnapshot, t.digest, wantDigest)
	}
	// The snapshot does not say when each subtree last changed: its zxid
	// bounds it (subtree.go).
	for _, s := range t.tops {
		s.lastZxid = h.lastZxid
	}
	t.settle(h.lastZxid, false)
	return t, damaged, nil
}

// sectionHeader is what a section's header frame says.
type sectionHeader struct {
	name   string
	nodes  int64
	length int64
	digest uint64
}

// sectionHeader reads a section's header frame.
func (sr *snapReader) sectionHeader() (sectionHeader, error) {
	d, err := sr.next("section")
	if err != nil {
		return sectionHeader{}, err
	}
	sh := sectionHeader{name: d.String(), nodes: d.Long(), length: d.Long(), digest: uint64(d.Long())}
	if err := done(d, "section"); err != nil {
		return sectionHeader{}, err
	}
	if sh.name == "" || strings.ContainsAny(sh.name, "/\x00") || sh.nodes < 0 || sh.length < 0 || sh.nodes > sh.length {
		return sectionHeader{}, fmt.Errorf("%w: section header %q: %d nodes in %d bytes", ErrBadSnapshot, sh.name, sh.nodes, sh.length)
	}
	return sh, nil
}

// section reads the body of the section sh announces and its checksum,
// outside the snapshot's own checksum, and decodes its nodes. Damage
// inside the body (a checksum or a frame that fails) is reported in why,
// with the body consumed to its end; err is for what ends the whole read
// (r's errors, a snapshot cut short).
func (sr *snapReader) section(sh sectionHeader, nACL int) (recs []nodeRecord, why string, err error) {
	body := &io.LimitedReader{R: sr.r, N: sh.length}
	sec := &snapReader{r: bufio.NewReaderSize(body, 64<<10), crc: crc32.New(crcTable)}
	for i := int64(0); i < sh.nodes && why == ""; i++ {
		d, err := sec.next("node")
		if err != nil {
			if !errors.Is(err, ErrBadSnapshot) {
				return nil, "", err
			}
			why = err.Error()
			break
		}
		rec, err := decodeNode(d, nACL)
		if err != nil {
			why = err.Error()
			break
		}
		recs = append(recs, rec)
	}
	// The rest of the body: none when it is whole. A frame that failed
	// may have read into it; the body's end is counted on r.
	rest, err := io.Copy(sec.crc, sec.r)
	if err != nil {
		return nil, "", err
	}
	if body.N != 0 {
		return nil, "", fmt.Errorf("%w: truncated in section /%s", ErrBadSnapshot, sh.name)
	}
	if why == "" && rest != 0 {
		why = fmt.Sprintf("%d bytes after its nodes", rest)
	}
	var sum [4]byte
	if _, err := io.ReadFull(sr.r, sum[:]); err != nil {
		return nil, "", sr.readErr("section checksum", err)
	}
	sr.off += sh.length + 4
	if why == "" && binary.BigEndian.Uint32(sum[:]) != sec.crc.Sum32() {
		why = "checksum mismatch"
	}
	if why != "" {
		return nil, why, nil
	}
	return recs, "", nil
}

// linkSection links a section's nodes under its root, all or none: what
// is wrong with them is returned, and the tree is then as before.
func (t *Tree) linkSection(sh sectionHeader, recs []nodeRecord, sets []*aclSet) string {
	before := t.digest
	prefix := "/" + sh.name + "/"
	for i, rec := range recs {
		err := error(nil)
		if !strings.HasPrefix(rec.path, prefix) {
			err = fmt.Errorf("node %q outside the section", rec.path)
		} else {
			err = t.linkNode(rec, sets, false)
		}
		if err != nil {
			t.unlinkSection(recs[:i])
			return err.Error()
		}
	}
	if got := t.digest - before; got != sh.digest {
		t.unlinkSection(recs)
		return fmt.Sprintf("digest %#x, its header says %#x", got, sh.digest)
	}
	return ""
}

// unlinkSection takes back the nodes linkSection linked, children first.
func (t *Tree) unlinkSection(recs []nodeRecord) {
	for i := len(recs) - 1; i >= 0; i-- {
		path := recs[i].path
		n := t.nodes[path]
		parentPath, name, _ := splitPath(path)
		t.removeNode(path, t.nodes[parentPath], name, n)
	}
	clear(t.touched)
	t.touched = t.touched[:0]
}

// snapHeader is what a snapshot's magic and header frames say.
type snapHeader struct {
	lastZxid                   int64
	digest                     uint64
	nACL, nSessions, nSections int32
	// nNodes counts the nodes outside every section.
	nNodes int64
}

// header reads and checks the magic and header frames.
func (sr *snapReader) header() (snapHeader, error) {
	d, err := sr.next("magic")
	if err != nil {
		return snapHeader{}, err
	}
	magic, version := d.String(), d.Int()
	if magic != snapMagic || version != snapVersion && version != snapVersionSections {
		if d.Err() == nil && magic == snapMagic {
			return snapHeader{}, fmt.Errorf("%w: unknown format version %d", ErrBadSnapshot, version)
		}
		return snapHeader{}, fmt.Errorf("%w: not a Giraffe tree snapshot", ErrBadSnapshot)
	}
	if err := done(d, "magic"); err != nil {
		return snapHeader{}, err
	}
	if d, err = sr.next("header"); err != nil {
		return snapHeader{}, err
	}
	h := snapHeader{lastZxid: d.Long(), digest: uint64(d.Long())}
	h.nACL, h.nNodes, h.nSessions = d.Int(), d.Long(), d.Int()
	if version == snapVersionSections {
		if h.nSections = d.Int(); d.Err() == nil && h.nSections < 1 {
			return snapHeader{}, fmt.Errorf("%w: version %d without sections", ErrBadSnapshot, version)
		}
	}
	if err := done(d, "header"); err != nil {
		return snapHeader{}, err
	}
	if h.nACL < 0 || h.nNodes < 1 || h.nSessions < 0 {
		return snapHeader{}, fmt.Errorf("%w: header counts %d acls, %d nodes, %d sessions", ErrBadSnapshot, h.nACL, h.nNodes, h.nSessions)
	}
	return h, nil
}

// trailer reads the trailer, checks it against everything read before it,
// and checks that nothing follows.
func (sr *snapReader) trailer() error {
	sum := sr.crc.Sum32()
	var trailer [4]byte
	if _, err := io.ReadFull(sr.r, trailer[:]); err != nil {
		return sr.readErr("trailer", err)
	}
	if binary.BigEndian.Uint32(trailer[:]) != sum {
		return fmt.Errorf("%w: checksum mismatch", ErrBadSnapshot)
	}
	if _, err := sr.r.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: data after the trailer", ErrBadSnapshot)
	}
	return nil
}

// nodeRecord is one node frame, decoded.
type nodeRecord struct {
	path     string
	n        *node
	aclIndex int32
}

// decodeNode decodes one node frame of a snapshot with nACL ACL lists.
func decodeNode(d *zkproto.Decoder, nACL int) (nodeRecord, error) {
	path := d.String()
	n := &node{}
	n.data = d.Buffer()
	aclIndex := d.Int()
	n.czxid, n.mzxid, n.pzxid = d.Long(), d.Long(), d.Long()
	n.ctime, n.mtime = d.Long(), d.Long()
	n.owner = d.Long()
	n.version, n.cversion, n.aversion = d.Int(), d.Int(), d.Int()
	if err := done(d, "node"); err != nil {
		return nodeRecord{}, err
	}
	if aclIndex < 0 || int(aclIndex) >= nACL {
		return nodeRecord{}, fmt.Errorf("%w: node %q: ACL index %d of %d", ErrBadSnapshot, path, aclIndex, nACL)
	}
	n.pathHash = hashPath(path)
	n.dataHash = hashData(n.data)
	return nodeRecord{path: path, n: n, aclIndex: aclIndex}, nil
}

// linkNode links a decoded node under its parent, which must already have
// been linked.
func (t *Tree) linkNode(rec nodeRecord, sets []*aclSet, root bool) error {
	path, n := rec.path, rec.n
	if _, dup := t.nodes[path]; dup {
		return fmt.Errorf("%w: node %q repeated", ErrBadSnapshot, path)
	}
	if root {
		if path != rootPath {
			return fmt.Errorf("%w: first node is %q, not the root", ErrBadSnapshot, path)
		}
		t.addNode(path, nil, "", n, t.acls.acquire(sets[rec.aclIndex].list))
		return nil
	}
	parentPath, name, ok := splitPath(path)
	if !ok || name == "" || strings.IndexByte(name, 0) >= 0 {
		return fmt.Errorf("%w: bad node path %q", ErrBadSnapshot, path)
	}
	parent := t.nodes[parentPath]
	if parent == nil {
		return fmt.Errorf("%w: node %q before its parent", ErrBadSnapshot, path)
	}
	t.addNode(path, parent, name, n, t.acls.acquire(sets[rec.aclIndex].list))
	return nil
}
