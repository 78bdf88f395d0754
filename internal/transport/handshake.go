package transport

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// The handshake is the first frame each way on a new connection. The dialer
// sends a hello; the acceptor checks it and answers with an ack that either
// accepts or carries the reason of the rejection, so that the dialer can log
// why it is refused (a misconfigured address book or cluster name is the
// usual cause and should be obvious from either side's log).

// helloMagic starts every hello; a client speaking another protocol (or
// garbage) is recognized on its first bytes.
var helloMagic = [4]byte{'G', 'R', 'F', 'P'}

// handshakeVersion is the version of the hello and ack frames. Version 2
// adds the dialer's address to the hello; a version 1 hello (without it)
// is still accepted.
const handshakeVersion byte = 2

// maxHelloAddr bounds the address a hello carries.
const maxHelloAddr = 256

// maxHandshakeFrame bounds the hello and ack frames, which carry a cluster
// name or a reason and nothing else.
const maxHandshakeFrame = 4096

// maxClusterName bounds the cluster name carried by a hello.
const maxClusterName = 1024

// maxNamespacesText bounds the description of the namespace table a hello
// carries (longer ones are cut: the hash decides, the text explains).
const maxNamespacesText = 1024

// ErrRejected is wrapped by the error a dialer gets when the peer refused
// its handshake.
var ErrRejected = errors.New("transport: handshake rejected")

var errBadHandshake = errors.New("transport: malformed handshake")

// hello is the dialer's introduction.
type hello struct {
	Cluster  string
	From, To gpaxos.ID // the dialer, and whom it believes it dialed
	// Addr is the address the dialer listens on for peers ("" in a
	// version 1 hello), by which an acceptor whose address book lacks the
	// dialer can answer it (Config.AcceptUnknownPeers).
	Addr string
	// Namespaces is the hash of the dialer's namespace table (0: none
	// declared) and NamespacesText its description, for the log lines
	// of a refusal.
	Namespaces     uint64
	NamespacesText string
}

// encode writes the hello. The namespace fields follow the cluster name
// only when a table is declared, so that a server without namespaces
// introduces itself exactly as one that does not know them.
func (h hello) encode() []byte {
	b := append(helloMagic[:], handshakeVersion)
	b = binary.AppendUvarint(b, uint64(h.From))
	b = binary.AppendUvarint(b, uint64(h.To))
	b = binary.AppendUvarint(b, uint64(len(h.Cluster)))
	b = append(b, h.Cluster...)
	addr := h.Addr
	if len(addr) > maxHelloAddr {
		addr = ""
	}
	b = binary.AppendUvarint(b, uint64(len(addr)))
	b = append(b, addr...)
	if h.Namespaces == 0 {
		return b
	}
	b = binary.LittleEndian.AppendUint64(b, h.Namespaces)
	text := h.NamespacesText
	if len(text) > maxNamespacesText {
		text = text[:maxNamespacesText-3] + "..."
	}
	b = binary.AppendUvarint(b, uint64(len(text)))
	return append(b, text...)
}

func decodeHello(b []byte) (hello, error) {
	var h hello
	if len(b) < len(helloMagic)+1 || [4]byte(b[:4]) != helloMagic {
		return h, fmt.Errorf("%w: bad magic", errBadHandshake)
	}
	version := b[4]
	if version != 1 && version != handshakeVersion {
		return h, fmt.Errorf("%w: version %d, want %d", errBadHandshake, version, handshakeVersion)
	}
	d := decoder{b: b[5:]}
	h.From = gpaxos.ID(d.uvarint())
	h.To = gpaxos.ID(d.uvarint())
	n := d.count(1, "cluster name bytes")
	if d.err != nil {
		return h, fmt.Errorf("%w: %v", errBadHandshake, d.err)
	}
	if n > maxClusterName {
		return h, fmt.Errorf("%w: cluster name length %d", errBadHandshake, n)
	}
	h.Cluster = string(d.b[:n])
	d.b = d.b[n:]
	if version >= 2 {
		n = d.count(1, "address bytes")
		if d.err != nil {
			return h, fmt.Errorf("%w: %v", errBadHandshake, d.err)
		}
		if n > maxHelloAddr {
			return h, fmt.Errorf("%w: address length %d", errBadHandshake, n)
		}
		h.Addr = string(d.b[:n])
		d.b = d.b[n:]
	}
	if len(d.b) == 0 {
		return h, nil
	}
	h.Namespaces = d.uint64()
	n = d.count(1, "namespace table bytes")
	if d.err != nil {
		return h, fmt.Errorf("%w: %v", errBadHandshake, d.err)
	}
	if h.Namespaces == 0 || n > maxNamespacesText || n != len(d.b) {
		return h, fmt.Errorf("%w: namespace table hash %#x, text length %d with %d bytes left",
			errBadHandshake, h.Namespaces, n, len(d.b))
	}
	h.NamespacesText = string(d.b)
	return h, nil
}

// ack answers a hello: an empty Reason accepts.
type ack struct {
	Reason string
}

func (a ack) encode() []byte {
	b := []byte{handshakeVersion}
	b = binary.AppendUvarint(b, uint64(len(a.Reason)))
	return append(b, a.Reason...)
}

func decodeAck(b []byte) (ack, error) {
	if len(b) < 1 || b[0] != handshakeVersion {
		return ack{}, fmt.Errorf("%w: bad ack", errBadHandshake)
	}
	d := decoder{b: b[1:]}
	n := d.count(1, "reason bytes")
	if d.err != nil || n != len(d.b) {
		return ack{}, fmt.Errorf("%w: bad ack", errBadHandshake)
	}
	return ack{Reason: string(d.b)}, nil
}
