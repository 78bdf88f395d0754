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

// Snapshot format, version 1. A snapshot is a sequence of frames, each a
// 4-byte big-endian length and a jute-encoded payload:
//
//	magic    "GIRAFFE-TREE" and the format version (an int)
//	header   lastZxid, digest, then the counts of ACL lists, nodes, sessions
//	acls     one frame per distinct ACL list, sorted by encoding
//	nodes    one frame per node, parents before children, children by name:
//	         path, data (null kept), ACL index, the stored stat fields
//	sessions one frame per session, by id: id, timeout, password
//	trailer  the CRC-32C of every byte before it
//
// The same tree always gives the same bytes. ReadSnapshot rebuilds every
// index and the digest from the nodes and sessions and refuses a snapshot
// whose digest or checksum does not match, so a damaged or misread snapshot
// is never loaded silently.
const (
	snapMagic   = "GIRAFFE-TREE"
	snapVersion = 1
	// maxFrame bounds one frame: a node's data is limited by the server's
	// maximum packet size, far below this.
	maxFrame = 1 << 30
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ErrBadSnapshot is wrapped by every error ReadSnapshot returns for a
// snapshot that is malformed, as opposed to one it could not read.
var ErrBadSnapshot = errors.New("datatree: bad snapshot")

// snapWriter frames payloads onto w and checksums everything written.
type snapWriter struct {
	w   *bufio.Writer
	crc hash.Hash32
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
	_, _ = sw.crc.Write(b)
	_, sw.err = sw.w.Write(b)
}

// WriteSnapshot writes the whole tree and session table to w. The tree must
// not change while it runs.
func (t *Tree) WriteSnapshot(w io.Writer) error {
	sw := &snapWriter{w: bufio.NewWriterSize(w, 64<<10), crc: crc32.New(crcTable), enc: zkproto.NewEncoder(nil)}
	sw.enc.String(snapMagic)
	sw.enc.Int(snapVersion)
	sw.frame()

	// Number ACL lists by their encodings so the output is deterministic.
	sets := t.acls.all()
	encoded := make(map[*aclSet][]byte, len(sets))
	for _, s := range sets {
		e := zkproto.NewEncoder(nil)
		zkproto.EncodeACLs(e, s.list)
		encoded[s] = e.Bytes()
	}
	slices.SortFunc(sets, func(a, b *aclSet) int { return bytes.Compare(encoded[a], encoded[b]) })
	index := make(map[*aclSet]int32, len(sets))
	for i, s := range sets {
		index[s] = int32(i)
	}

	sw.enc.Long(t.lastZxid)
	sw.enc.Long(int64(t.digest))
	sw.enc.Int(int32(len(sets)))
	sw.enc.Long(int64(len(t.nodes)))
	sw.enc.Int(int32(len(t.sessions)))
	sw.frame()
	for _, s := range sets {
		sw.write(binary.BigEndian.AppendUint32(nil, uint32(len(encoded[s]))))
		sw.write(encoded[s])
	}

	var walk func(path string, n *node)
	walk = func(path string, n *node) {
		enc := sw.enc
		enc.String(path)
		enc.Buffer(n.data)
		enc.Int(index[n.acl])
		enc.Long(n.czxid)
		enc.Long(n.mzxid)
		enc.Long(n.pzxid)
		enc.Long(n.ctime)
		enc.Long(n.mtime)
		enc.Long(n.owner)
		enc.Int(n.version)
		enc.Int(n.cversion)
		enc.Int(n.aversion)
		sw.frame()
		names := n.childNames()
		prefix := path
		if path != rootPath {
			prefix += "/"
		}
		for _, name := range names {
			walk(prefix+name, n.children[name])
		}
	}
	walk(rootPath, t.nodes[rootPath])

	for _, si := range t.Sessions() {
		sw.enc.Long(si.ID)
		sw.enc.Int(si.Timeout)
		sw.enc.Buffer(si.Passwd)
		sw.frame()
	}
	if sw.err != nil {
		return sw.err
	}
	if _, err := sw.w.Write(binary.BigEndian.AppendUint32(nil, sw.crc.Sum32())); err != nil {
		return err
	}
	return sw.w.Flush()
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
// are.
func ReadSnapshot(r io.Reader) (*Tree, error) {
	sr := &snapReader{r: bufio.NewReaderSize(r, 64<<10), crc: crc32.New(crcTable)}
	h, err := sr.header()
	if err != nil {
		return nil, err
	}

	t := newEmpty()
	t.lastZxid = h.lastZxid
	var d *zkproto.Decoder
	// Each list is acquired once here to keep it alive while nodes are
	// read, and released at the end, so lists no node uses are dropped.
	sets := make([]*aclSet, 0, min(int(h.nACL), 1<<16))
	for i := int32(0); i < h.nACL; i++ {
		if d, err = sr.next("acl"); err != nil {
			return nil, err
		}
		list := zkproto.DecodeACLs(d)
		if err := done(d, "acl"); err != nil {
			return nil, err
		}
		if list == nil {
			return nil, fmt.Errorf("%w: null ACL list %d", ErrBadSnapshot, i)
		}
		s := t.acls.acquire(list)
		if s.refs != 1 {
			return nil, fmt.Errorf("%w: ACL list %d repeated", ErrBadSnapshot, i)
		}
		sets = append(sets, s)
	}

	for i := int64(0); i < h.nNodes; i++ {
		if d, err = sr.next("node"); err != nil {
			return nil, err
		}
		if err := t.readNode(d, sets, i == 0); err != nil {
			return nil, err
		}
	}
	for _, s := range sets {
		t.acls.release(s)
	}

	prev := int64(0)
	for i := int32(0); i < h.nSessions; i++ {
		if d, err = sr.next("session"); err != nil {
			return nil, err
		}
		id, timeout, passwd := d.Long(), d.Int(), d.Buffer()
		if err := done(d, "session"); err != nil {
			return nil, err
		}
		if (i > 0 && id <= prev) || !validSessionID(id) {
			return nil, fmt.Errorf("%w: session %#x out of order or invalid", ErrBadSnapshot, id)
		}
		prev = id
		s := &session{timeout: timeout, passwd: passwd, digest: sessionDigest(id, timeout, passwd)}
		t.sessions[id] = s
		t.digest += s.digest
	}

	if err := sr.trailer(); err != nil {
		return nil, err
	}
	if t.digest != h.digest {
		return nil, fmt.Errorf("%w: digest %#x, header says %#x", ErrBadSnapshot, t.digest, h.digest)
	}
	// The snapshot does not say when each subtree last changed: its zxid
	// bounds it (subtree.go).
	for _, s := range t.tops {
		s.lastZxid = h.lastZxid
	}
	t.settle(h.lastZxid, false)
	return t, nil
}

// snapHeader is what a snapshot's magic and header frames say.
type snapHeader struct {
	lastZxid        int64
	digest          uint64
	nACL, nSessions int32
	nNodes          int64
}

// header reads and checks the magic and header frames.
func (sr *snapReader) header() (snapHeader, error) {
	d, err := sr.next("magic")
	if err != nil {
		return snapHeader{}, err
	}
	if magic, v := d.String(), d.Int(); magic != snapMagic || v != snapVersion {
		if d.Err() == nil && magic == snapMagic {
			return snapHeader{}, fmt.Errorf("%w: unknown format version %d", ErrBadSnapshot, v)
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

// readNode decodes one node frame and links the node under its parent,
// which must already have been read.
func (t *Tree) readNode(d *zkproto.Decoder, sets []*aclSet, root bool) error {
	path := d.String()
	n := &node{}
	n.data = d.Buffer()
	aclIndex := d.Int()
	n.czxid, n.mzxid, n.pzxid = d.Long(), d.Long(), d.Long()
	n.ctime, n.mtime = d.Long(), d.Long()
	n.owner = d.Long()
	n.version, n.cversion, n.aversion = d.Int(), d.Int(), d.Int()
	if err := done(d, "node"); err != nil {
		return err
	}
	if aclIndex < 0 || int(aclIndex) >= len(sets) {
		return fmt.Errorf("%w: node %q: ACL index %d of %d", ErrBadSnapshot, path, aclIndex, len(sets))
	}
	if _, dup := t.nodes[path]; dup {
		return fmt.Errorf("%w: node %q repeated", ErrBadSnapshot, path)
	}
	n.pathHash = hashPath(path)
	n.dataHash = hashData(n.data)
	if root {
		if path != rootPath {
			return fmt.Errorf("%w: first node is %q, not the root", ErrBadSnapshot, path)
		}
		t.addNode(path, nil, "", n, t.acls.acquire(sets[aclIndex].list))
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
	t.addNode(path, parent, name, n, t.acls.acquire(sets[aclIndex].list))
	return nil
}
