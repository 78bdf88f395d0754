package replica

import (
	"encoding/binary"
	"errors"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// headerLen is the size of the header every proposal carries in front of
// the application's body: origin (with headerMark set), the origin's
// incarnation, stream and sequence number. headerLenV1 headers, written
// before incarnations existed, lack the incarnation and the mark.
const (
	headerLen   = 32
	headerLenV1 = 24
	// headerMark in the origin field tells a header with an incarnation
	// from one without (server ids never reach it).
	headerMark = uint64(1) << 63
)

// errShortPayload reports an entry too short to hold a proposal header.
var errShortPayload = errors.New("replica: entry shorter than a proposal header")

// proposalHeader identifies a proposal: the server that made it and the
// incarnation of its durable state (streams of another incarnation are not
// its own), the stream (one run of in-order proposals) and its position in
// the stream, from 1.
type proposalHeader struct {
	Origin gpaxos.ID
	Inc    uint64
	Stream uint64
	Seq    uint64
}

func (h proposalHeader) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(h.Origin)|headerMark)
	b = binary.BigEndian.AppendUint64(b, h.Inc)
	b = binary.BigEndian.AppendUint64(b, h.Stream)
	return binary.BigEndian.AppendUint64(b, h.Seq)
}

func parseHeader(data []byte) (proposalHeader, []byte, error) {
	if len(data) < headerLenV1 {
		return proposalHeader{}, nil, errShortPayload
	}
	origin := binary.BigEndian.Uint64(data)
	if origin&headerMark == 0 {
		return proposalHeader{
			Origin: gpaxos.ID(origin),
			Stream: binary.BigEndian.Uint64(data[8:]),
			Seq:    binary.BigEndian.Uint64(data[16:]),
		}, data[headerLenV1:], nil
	}
	if len(data) < headerLen {
		return proposalHeader{}, nil, errShortPayload
	}
	return proposalHeader{
		Origin: gpaxos.ID(origin &^ headerMark),
		Inc:    binary.BigEndian.Uint64(data[8:]),
		Stream: binary.BigEndian.Uint64(data[16:]),
		Seq:    binary.BigEndian.Uint64(data[24:]),
	}, data[headerLen:], nil
}
