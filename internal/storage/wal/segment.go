package wal

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/fsutil"
)

const (
	segmentPrefix = "log."
	tempSuffix    = ".tmp"
	lockName      = "wal.lock"
	// nameHexDigits makes names sort like the zxids they carry.
	nameHexDigits = 16
)

// segmentFile is a segment as named in the directory.
type segmentFile struct {
	// base is the smallest zxid the segment may hold: one more than the
	// zxid of the last record before it.
	base int64
	path string
}

// segmentName returns the file name of the segment with the given base,
// e.g. log.0000000100000001 (ZooKeeper's convention, padded so that lexical
// order is numeric order).
func segmentName(base int64) string {
	return fmt.Sprintf("%s%0*x", segmentPrefix, nameHexDigits, base)
}

// parseSegmentName returns the base zxid a segment file name carries.
func parseSegmentName(name string) (base int64, ok bool) {
	hex, found := strings.CutPrefix(name, segmentPrefix)
	if !found || len(hex) != nameHexDigits {
		return 0, false
	}
	u, err := strconv.ParseUint(hex, 16, 64)
	if err != nil || u == 0 || u > 1<<63-1 || hex != fmt.Sprintf("%0*x", nameHexDigits, u) {
		return 0, false
	}
	return int64(u), true
}

// listSegments returns the segments in dir in zxid order. Files with other
// names are ignored.
func listSegments(dir string) ([]segmentFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []segmentFile
	for _, e := range entries {
		if base, ok := parseSegmentName(e.Name()); ok && e.Type().IsRegular() {
			segs = append(segs, segmentFile{base: base, path: filepath.Join(dir, e.Name())})
		}
	}
	slices.SortFunc(segs, func(a, b segmentFile) int { return cmp.Compare(a.base, b.base) })
	return segs, nil
}

// listTemps returns the leftover temporary segment files in dir: segments
// whose creation a crash interrupted before the rename that publishes them.
func listTemps(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var temps []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, segmentPrefix) && strings.HasSuffix(n, tempSuffix) {
			temps = append(temps, filepath.Join(dir, n))
		}
	}
	return temps, nil
}

// createSegment makes a new segment durable before anyone can see it: the
// header is written and synced under a temporary name, then renamed, then
// the directory is synced. So a segment file that exists under its real
// name always has a complete header, and a crash leaves at most a temporary
// file that Open removes. The returned file is open for appending. With
// replace, a segment of the same name, which must hold no record, is
// replaced by the rename; otherwise an existing one is an error.
func createSegment(dir string, h segmentHeader, replace, noSync bool) (f *os.File, path string, err error) {
	path = filepath.Join(dir, segmentName(h.base()))
	tmp := path + tempSuffix
	f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(h.encode()); err != nil {
		return nil, "", err
	}
	if !noSync {
		if err = fsutil.SyncData(f); err != nil {
			return nil, "", err
		}
	}
	if _, err = os.Stat(path); err == nil && !replace {
		return nil, "", fmt.Errorf("wal: segment %s already exists", path)
	}
	if err = os.Rename(tmp, path); err != nil {
		return nil, "", err
	}
	if !noSync {
		if err = fsutil.SyncDir(dir); err != nil {
			return nil, "", err
		}
	}
	return f, path, nil
}

// readSegmentHeader reads and validates the header of the segment at path,
// whose name says its base is base.
func readSegmentHeader(f io.ReaderAt, path string, base int64) (segmentHeader, error) {
	var b [segmentHeaderSize]byte
	if _, err := f.ReadAt(b[:], 0); err != nil {
		if errors.Is(err, io.EOF) {
			return segmentHeader{}, corrupt(path, 0, "segment shorter than its %d-byte header", segmentHeaderSize)
		}
		return segmentHeader{}, err
	}
	h, reason := decodeSegmentHeader(b[:])
	if reason != "" {
		return segmentHeader{}, corrupt(path, 0, "%s", reason)
	}
	if h.base() != base {
		return segmentHeader{}, corrupt(path, 0, "header says the segment follows zxid %#x, file name says %#x", h.prev, base-1)
	}
	return h, nil
}
