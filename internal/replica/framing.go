package replica

import (
	"encoding/binary"
	"errors"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
)

// headerLen is the size of the header every proposal carries in front of
// the application's body: origin, stream and sequence number.
const headerLen = 24

// errShortPayload reports an entry too short to hold a proposal header.
var errShortPayload = errors.New("replica: entry shorter than a proposal header")

// proposalHeader identifies a proposal: the server that made it, the stream
// (one run of in-order proposals) and its position in the stream, from 1.
type proposalHeader struct {
	Origin gpaxos.ID
	Stream uint64
	Seq    uint64
}

func (h proposalHeader) append(b []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(h.Origin))
	b = binary.BigEndian.AppendUint64(b, h.Stream)
	return binary.BigEndian.AppendUint64(b, h.Seq)
}

func parseHeader(data []byte) (proposalHeader, []byte, error) {
	if len(data) < headerLen {
		return proposalHeader{}, nil, errShortPayload
	}
	h := proposalHeader{
		Origin: gpaxos.ID(binary.BigEndian.Uint64(data)),
		Stream: binary.BigEndian.Uint64(data[8:]),
		Seq:    binary.BigEndian.Uint64(data[16:]),
	}
	return h, data[headerLen:], nil
}
