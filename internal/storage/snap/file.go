package snap

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// A snapshot also travels outside a snapshot directory, as a file of any
// name: a backup taken from a live server (Encode on the server, Receive
// on the tool's side) and read back later (Inspect, ReadFile). Its bytes
// are exactly those of a file Save writes.

// Info describes a valid snapshot file.
type Info struct {
	// Zxid is the zxid of the state the snapshot holds.
	Zxid int64
	// Version is the framing's format version.
	Version int
	// Size is the file's length in bytes; the body is BodyBytes long
	// and starts BodyOffset bytes into the file.
	Size       int64
	BodyOffset int64
	BodyBytes  int64
	// Checksum is the CRC-32C of the header and the body, as the trailer
	// holds it.
	Checksum uint32
}

// FramedSize returns the size of a snapshot whose body is bodyBytes long,
// what Encode will write, for a stream to announce before it starts.
func FramedSize(bodyBytes int64) int64 { return headerSize + bodyBytes + trailerSize }

// Inspect verifies the framing and checksum of the snapshot file at path,
// whatever its name, and describes it. A damaged file is an error saying
// what is wrong.
func Inspect(path string) (Info, error) { return verifyFile(path) }

// ReadFile verifies the snapshot file at path, whatever its name, then
// calls read with its zxid and body, verifying the checksum again as the
// bytes go by, as LoadNewest does. read must consume the whole body.
func ReadFile(path string, read func(zxid int64, r io.Reader) error) (Info, error) {
	info, err := verifyFile(path)
	if err != nil {
		return Info{}, err
	}
	if err := load(snapshotFile{zxid: info.Zxid, path: path}, info.BodyBytes, info.Checksum, read); err != nil {
		return Info{}, err
	}
	return info, nil
}

// Receive stores the framed snapshot read from r (what Encode writes) at
// path, atomically: it writes a temporary file beside path, fsyncs it,
// verifies its framing and checksum, hands the body to check (when not
// nil; an error refuses the snapshot), and only then renames it to path,
// replacing any file there, and fsyncs the directory. On any error path
// is left as it was and the temporary file is removed.
func Receive(path string, r io.Reader, check func(zxid int64, body io.Reader) error) (info Info, err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".*"+tempSuffix)
	if err != nil {
		return Info{}, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = io.Copy(f, r); err != nil {
		return Info{}, fmt.Errorf("snap: receiving snapshot: %w", err)
	}
	if err = f.Sync(); err != nil {
		return Info{}, err
	}
	if err = f.Close(); err != nil {
		return Info{}, err
	}
	if check == nil {
		check = func(int64, io.Reader) error { return nil }
	}
	if info, err = ReadFile(tmp, func(zxid int64, body io.Reader) error {
		if err := check(zxid, body); err != nil {
			return err
		}
		_, err := io.Copy(io.Discard, body)
		return err
	}); err != nil {
		return Info{}, fmt.Errorf("snap: the snapshot received is not valid: %w", err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return Info{}, err
	}
	if err = fsutil.SyncDir(dir); err != nil {
		return Info{}, err
	}
	return info, nil
}
