package snap

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Byte layout (integers little-endian):
//
//	header, 24 bytes:
//	0  magic "GSNP"
//	4  uint32 format version (1)
//	8  int64  zxid of the state the snapshot holds
//	16 uint32 CRC-32C of bytes 0..16
//	20 uint32 reserved, zero
//	body, n bytes: whatever the write callback of Save wrote
//	trailer, 16 bytes:
//	0  uint64 n
//	8  uint32 CRC-32C of the header and the body
//	12 magic "GEND"
//
// The header checksum rejects a file that is not a snapshot before reading
// it all; the trailer's length and end magic reject a truncated one; the
// trailer's checksum covers everything before it.
const (
	headerMagic   = "GSNP"
	trailerMagic  = "GEND"
	formatVersion = 1
	headerSize    = 24
	trailerSize   = 16

	filePrefix    = "snapshot."
	tempSuffix    = ".tmp"
	nameHexDigits = 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func encodeHeader(zxid int64) []byte {
	b := make([]byte, headerSize)
	copy(b[0:4], headerMagic)
	binary.LittleEndian.PutUint32(b[4:8], formatVersion)
	binary.LittleEndian.PutUint64(b[8:16], uint64(zxid))
	binary.LittleEndian.PutUint32(b[16:20], crc32.Checksum(b[0:16], castagnoli))
	return b
}

// decodeHeader returns the zxid in a header, or a reason it is invalid.
func decodeHeader(b []byte) (int64, string) {
	if string(b[0:4]) != headerMagic {
		return 0, "bad magic"
	}
	if binary.LittleEndian.Uint32(b[16:20]) != crc32.Checksum(b[0:16], castagnoli) {
		return 0, "header checksum mismatch"
	}
	if v := binary.LittleEndian.Uint32(b[4:8]); v != formatVersion {
		return 0, fmt.Sprintf("unsupported format version %d", v)
	}
	return int64(binary.LittleEndian.Uint64(b[8:16])), ""
}

func encodeTrailer(bodyLen int64, crc uint32) []byte {
	b := make([]byte, trailerSize)
	binary.LittleEndian.PutUint64(b[0:8], uint64(bodyLen))
	binary.LittleEndian.PutUint32(b[8:12], crc)
	copy(b[12:16], trailerMagic)
	return b
}

// fileName returns the name of the snapshot of zxid.
func fileName(zxid int64) string { return fmt.Sprintf("%s%0*x", filePrefix, nameHexDigits, zxid) }

// parseName returns the zxid a snapshot file name carries.
func parseName(name string) (int64, bool) {
	hex, ok := strings.CutPrefix(name, filePrefix)
	if !ok || len(hex) != nameHexDigits {
		return 0, false
	}
	u, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || u > 1<<63-1 || hex != fmt.Sprintf("%0*x", nameHexDigits, u) {
		return 0, false
	}
	return int64(u), true
}

// snapshotFile is a snapshot as named in the directory.
type snapshotFile struct {
	zxid int64
	path string
}

// list returns the snapshots in dir, oldest first. A missing directory
// holds none.
func list(dir string) ([]snapshotFile, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var snaps []snapshotFile
	for _, e := range entries {
		if z, ok := parseName(e.Name()); ok && e.Type().IsRegular() {
			snaps = append(snaps, snapshotFile{zxid: z, path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(snaps, func(a, b snapshotFile) int {
		switch {
		case a.zxid < b.zxid:
			return -1
		case a.zxid > b.zxid:
			return 1
		}
		return 0
	})
	return snaps, nil
}
