package snap

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
)

// ErrNoValidSnapshot is wrapped by LoadNewest when snapshot files exist but
// none of them is valid.
var ErrNoValidSnapshot = errors.New("snap: no valid snapshot")

// readBufferBytes sits between the file and the decoder.
const readBufferBytes = 1 << 20

// damage reports why a snapshot file is not a valid snapshot.
type damage struct {
	path   string
	reason string
}

func (d *damage) Error() string { return fmt.Sprintf("%s: %s", d.path, d.reason) }

// LoadNewest finds the newest valid snapshot in dir and calls read with its
// zxid and body. It reads each candidate twice: once to verify its
// checksum, so that read only ever sees bytes that were verified, and once
// more for read, verifying again on the way (a snapshot may be far larger
// than memory allows to buffer). Snapshots that fail verification are
// skipped with a warning. If there is no snapshot at all, LoadNewest
// returns found == false and no error; if there are snapshot files but none
// is valid, it returns an error wrapping ErrNoValidSnapshot that names them
// all. An error from read is returned as is, wrapped with the file name,
// without trying older snapshots: it means the decoder and the bytes
// disagree, which an older snapshot would not fix. read must consume the
// whole body.
func LoadNewest(dir string, read func(zxid int64, r io.Reader) error, opts ...Option) (zxid int64, found bool, err error) {
	cfg := configure(opts)
	s, info, found, err := newest(dir, func(path string, err error) {
		cfg.logger.Warn("snap: skipping invalid snapshot; an older one and the log will be used",
			"file", path, "err", err)
	})
	if err != nil || !found {
		return 0, false, err
	}
	if err := load(s, info.BodyBytes, info.Checksum, read); err != nil {
		return 0, false, err
	}
	return s.zxid, true, nil
}

// Newest returns the path of the newest valid snapshot in dir, the one
// LoadNewest would read, and describes it; found is false when dir holds
// no snapshot. As LoadNewest, it fails with an error wrapping
// ErrNoValidSnapshot when snapshot files exist and none is valid.
func Newest(dir string) (path string, info Info, found bool, err error) {
	s, info, found, err := newest(dir, func(string, error) {})
	return s.path, info, found, err
}

// newest finds the newest snapshot in dir that verifies, telling skip of
// every newer one that does not.
func newest(dir string, skip func(path string, err error)) (snapshotFile, Info, bool, error) {
	snaps, err := list(dir)
	if err != nil {
		return snapshotFile{}, Info{}, false, err
	}
	var skipped []string
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		info, err := verify(s)
		if err != nil {
			skip(s.path, err)
			skipped = append(skipped, err.Error())
			continue
		}
		return s, info, true, nil
	}
	if len(skipped) > 0 {
		return snapshotFile{}, Info{}, false, fmt.Errorf("%w in %s: %d snapshot files, all invalid (%s); refusing to start from an empty state",
			ErrNoValidSnapshot, dir, len(skipped), strings.Join(skipped, "; "))
	}
	return snapshotFile{}, Info{}, false, nil
}

// verify checks the framing and checksum of a snapshot file and that its
// header names the zxid its file name does. A format problem is a
// *damage; I/O errors pass through (and make LoadNewest skip the file all
// the same).
func verify(s snapshotFile) (Info, error) {
	info, err := verifyFile(s.path)
	if err != nil {
		return Info{}, err
	}
	if info.Zxid != s.zxid {
		return Info{}, &damage{s.path, fmt.Sprintf("header says zxid %#x, file name says %#x", info.Zxid, s.zxid)}
	}
	return info, nil
}

// verifyFile checks the framing and checksum of the snapshot file at path,
// whatever its name.
func verifyFile(path string) (Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return Info{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Info{}, err
	}
	size := st.Size()
	if size < headerSize+trailerSize {
		return Info{}, &damage{path, fmt.Sprintf("%d bytes, shorter than header and trailer", size)}
	}
	var hdr [headerSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return Info{}, err
	}
	zxid, reason := decodeHeader(hdr[:])
	if reason != "" {
		return Info{}, &damage{path, reason}
	}
	var tr [trailerSize]byte
	if _, err := f.ReadAt(tr[:], size-trailerSize); err != nil {
		return Info{}, err
	}
	bodyLen := int64(binary.LittleEndian.Uint64(tr[0:8]))
	if string(tr[12:16]) != trailerMagic || bodyLen != size-headerSize-trailerSize {
		return Info{}, &damage{path, "bad trailer (truncated or overwritten file)"}
	}
	crc := binary.LittleEndian.Uint32(tr[8:12])
	info := Info{Zxid: zxid, Version: formatVersion, Size: size, BodyOffset: headerSize, BodyBytes: bodyLen, Checksum: crc}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, headerSize+bodyLen)); err != nil {
		return Info{}, err
	}
	if h.Sum32() != crc {
		return info, &damage{path, "checksum mismatch"}
	}
	return info, nil
}

// ReadNewestDamaged is for a body format with checksums of its own, which
// can tell which of its parts a damaged body still holds intact: it hands
// read the body of the newest snapshot file in dir whose framing holds
// (header, length, end magic, the zxid its name says) although its
// checksum fails; read must check the body itself. found is false when
// there is no such file, or a valid snapshot is newer (LoadNewest's).
func ReadNewestDamaged(dir string, read func(zxid int64, r io.Reader) error) (zxid int64, found bool, err error) {
	snaps, err := list(dir)
	if err != nil {
		return 0, false, err
	}
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		info, err := verifyFile(s.path)
		var d *damage
		switch {
		case err == nil:
			return 0, false, nil
		case !errors.As(err, &d) || d.reason != "checksum mismatch" || info.Zxid != s.zxid:
			continue
		}
		f, err := os.Open(s.path)
		if err != nil {
			return 0, false, err
		}
		defer f.Close()
		br := bufio.NewReaderSize(io.NewSectionReader(f, headerSize, info.BodyBytes), readBufferBytes)
		if err := read(s.zxid, br); err != nil {
			return 0, false, fmt.Errorf("snap: reading damaged %s: %w", s.path, err)
		}
		if left, err := io.Copy(io.Discard, br); err != nil || left > 0 {
			return 0, false, fmt.Errorf("snap: reading damaged %s: %d bytes of the body left unread (%v)", s.path, left, err)
		}
		return s.zxid, true, nil
	}
	return 0, false, nil
}

// load hands the verified body to read, checking the checksum again as the
// bytes go by and that read consumed all of them.
func load(s snapshotFile, bodyLen int64, crc uint32, read func(int64, io.Reader) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	var hdr [headerSize]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil {
		return err
	}
	cr := &checksumReader{r: io.NewSectionReader(f, headerSize, bodyLen), crc: crc32.Update(0, castagnoli, hdr[:])}
	br := bufio.NewReaderSize(cr, readBufferBytes)
	if err := read(s.zxid, br); err != nil {
		return fmt.Errorf("snap: reading %s: %w", s.path, err)
	}
	left, err := io.Copy(io.Discard, br)
	if err != nil {
		return err
	}
	if left > 0 {
		return fmt.Errorf("snap: reading %s: %d bytes of the body left unread", s.path, left)
	}
	if cr.crc != crc {
		return fmt.Errorf("snap: %s changed while being read (checksum mismatch on the second pass)", s.path)
	}
	return nil
}

// checksumReader passes reads through and keeps the CRC-32C of them.
type checksumReader struct {
	r   io.Reader
	crc uint32
}

func (c *checksumReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}
