package replica

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// identity is who this data directory is: the server it belongs to, the
// incarnation of its durable state, how many times it was opened, and
// whether it lost durable state and must be registered anew before it
// votes (gpaxos.Config.Recovering).
//
// The incarnation is drawn at random when the directory's state is
// created, so a wiped or replaced disk comes back as another incarnation,
// which the ensemble's configuration does not count in place of the old
// one (gpaxos incarnation.go). Boots grows at every open: proposal streams
// start from it, so they grow across restarts whatever the clock says.
type identity struct {
	Server      uint64
	Incarnation uint64
	Boots       uint64
	Recovering  bool
}

const (
	idMagic = "GID1"
	idLen   = 4 + 8 + 8 + 8 + 1 + 4
)

func encodeIdentity(id identity) []byte {
	b := []byte(idMagic)
	b = binary.BigEndian.AppendUint64(b, id.Server)
	b = binary.BigEndian.AppendUint64(b, id.Incarnation)
	b = binary.BigEndian.AppendUint64(b, id.Boots)
	flag := byte(0)
	if id.Recovering {
		flag = 1
	}
	b = append(b, flag)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeIdentity(b []byte) (identity, error) {
	if len(b) != idLen || string(b[:4]) != idMagic {
		return identity{}, errors.New("not an identity file")
	}
	if crc32.Checksum(b[:idLen-4], castagnoli) != binary.BigEndian.Uint32(b[idLen-4:]) {
		return identity{}, errors.New("checksum mismatch")
	}
	id := identity{
		Server:      binary.BigEndian.Uint64(b[4:]),
		Incarnation: binary.BigEndian.Uint64(b[12:]),
		Boots:       binary.BigEndian.Uint64(b[20:]),
		Recovering:  b[28] == 1,
	}
	if b[28] > 1 || id.Incarnation == 0 {
		return identity{}, errors.New("bad field")
	}
	return id, nil
}

// readIdentity reads the identity file at path; found is false when there
// is none.
func readIdentity(path string) (id identity, found bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return identity{}, false, nil
	}
	if err != nil {
		return identity{}, false, err
	}
	id, err = decodeIdentity(b)
	if err != nil {
		return identity{}, false, fmt.Errorf("%s: %w", path, err)
	}
	return id, true, nil
}

// writeIdentity replaces the identity file atomically and durably (even
// with noSync: the identity decides whose votes count, and is written
// once per start).
func writeIdentity(path string, id identity) error {
	return fsutil.WriteFileAtomic(path, encodeIdentity(id), false)
}

// newIncarnation draws a fresh nonzero incarnation.
func newIncarnation() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:])
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v
		}
	}
}
