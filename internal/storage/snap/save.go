package snap

import (
	"bufio"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

// writeBufferBytes sits between the encoder and the file: encoders write
// many small pieces.
const writeBufferBytes = 1 << 20

// Save writes the snapshot of the state at zxid to dir and returns its path.
// write is called once with a writer for the body; an error from it (or any
// I/O error) aborts the snapshot and leaves no file behind. The snapshot is
// durable under its final name when Save returns nil; before that, a crash
// leaves at most a temporary file, which the next Save removes. Saves to
// one directory must not run concurrently.
func Save(dir string, zxid int64, write func(w io.Writer) error, opts ...Option) (path string, err error) {
	cfg := configure(opts)
	if zxid < 0 {
		return "", fmt.Errorf("snap: negative zxid %d", zxid)
	}
	if err := fsutil.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	removeTemps(dir, cfg)
	path = filepath.Join(dir, fileName(zxid))
	f, err := os.CreateTemp(dir, fileName(zxid)+".*"+tempSuffix)
	if err != nil {
		return "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = encode(&pacedWriter{f: f}, zxid, write); err != nil {
		return "", err
	}
	if err = f.Sync(); err != nil {
		return "", err
	}
	if err = f.Close(); err != nil {
		return "", err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return "", err
	}
	if err = fsutil.SyncDir(dir); err != nil {
		return "", err
	}
	return path, nil
}

// syncEveryBytes is how much of a snapshot Save writes between two
// fdatasyncs of the file. A snapshot is large, and a single fsync at its end
// would flush all of it at once: the log's fsyncs, which wait for the
// device, would then wait behind it, and every write with them. Flushing
// as it goes keeps what the log's fsync can find queued small.
const syncEveryBytes = 8 << 20

// pacedWriter writes to f, syncing its data every syncEveryBytes.
type pacedWriter struct {
	f        *os.File
	unsynced int
}

func (w *pacedWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.unsynced += n
	if err == nil && w.unsynced >= syncEveryBytes {
		w.unsynced = 0
		err = fsutil.SyncData(w.f)
	}
	return n, err
}

// Encode writes to w the whole snapshot of the state at zxid, framed as
// Save frames it (header, the body write writes, trailer), and returns the
// number of bytes written: what a snapshot file holds, for a reader on
// the other end of a stream to store (Receive) or inspect.
func Encode(w io.Writer, zxid int64, write func(w io.Writer) error) (int64, error) {
	if zxid < 0 {
		return 0, fmt.Errorf("snap: negative zxid %d", zxid)
	}
	return encode(w, zxid, write)
}

// encode frames the body write writes between a header and a trailer.
func encode(w io.Writer, zxid int64, write func(w io.Writer) error) (int64, error) {
	cw := &checksumWriter{w: w}
	bw := bufio.NewWriterSize(cw, writeBufferBytes)
	if _, err := bw.Write(encodeHeader(zxid)); err != nil {
		return 0, err
	}
	body := &countingWriter{w: bw}
	if err := write(body); err != nil {
		return 0, fmt.Errorf("snap: writing snapshot %#x: %w", zxid, err)
	}
	if err := bw.Flush(); err != nil {
		return 0, err
	}
	if _, err := w.Write(encodeTrailer(body.n, cw.crc)); err != nil {
		return 0, err
	}
	return headerSize + body.n + trailerSize, nil
}

// removeTemps deletes temporary files of interrupted Saves. Failing to is
// not fatal to the Save at hand.
func removeTemps(dir string, cfg config) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, filePrefix) && strings.HasSuffix(n, tempSuffix) {
			p := filepath.Join(dir, n)
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				cfg.logger.Warn("snap: cannot remove an interrupted snapshot", "file", p, "err", err)
				continue
			}
			cfg.logger.Info("snap: removed an interrupted snapshot", "file", p)
		}
	}
}

// checksumWriter passes writes through and keeps the CRC-32C of them.
type checksumWriter struct {
	w   io.Writer
	crc uint32
}

func (c *checksumWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	return n, err
}

// countingWriter passes writes through and counts the bytes.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
