// Package backup is what Giraffe's operator tools do with a server's data
// without the server: keep a snapshot taken from a live server as a file
// (Save), describe and list such a file (Inspect, Dump), make it the
// state of a fresh data directory (Restore), and list and verify a data
// directory's transaction log (DumpLog, VerifyLog). A snapshot file is a
// file of package snap's format holding a tree of package datatree's;
// docs/operations.md has the procedures.
package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/storage/snap"
)

// Status describes a snapshot file (giraffe snapshot status).
type Status struct {
	// Zxid is the zxid of the state the snapshot holds, as 0x and hex
	// digits (ZooKeeper's last_zxid).
	Zxid string `json:"zxid"`
	// Znodes and Sessions count the tree's nodes (the root included) and
	// its sessions.
	Znodes   int `json:"znodes"`
	Sessions int `json:"sessions"`
	// Digest is the tree's digest (mntr's and hash's), as 0x and hex
	// digits: equal on every replica at the same zxid.
	Digest string `json:"digest"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Checksum is the file's CRC-32C (header and body), as 0x and hex
	// digits; ChecksumOK says it and every check of the tree held.
	Checksum   string `json:"checksum"`
	ChecksumOK bool   `json:"checksum_ok"`
	// FormatVersion is the snapshot file format's version.
	FormatVersion int `json:"format_version"`
}

// retryEvery is how long Save waits before asking the servers again when
// none could give a snapshot for now.
const retryEvery = 250 * time.Millisecond

// Save takes a snapshot from the first of servers (admin addresses,
// host:port) that gives one and keeps it at path, atomically: the file
// appears only once the whole snapshot arrived and its checksum, its tree
// and the zxid the server announced agree (snap.Receive). It returns the
// file's status and the server it came from. While every server answers
// that it cannot for now (adminapi.ErrSnapshotUnavailable: not serving,
// busy, a leader change) or cannot be reached, Save asks them all again
// until ctx ends; any other failure of every server ends it at once.
func Save(ctx context.Context, c adminapi.Client, servers []string, path string) (Status, string, error) {
	if len(servers) == 0 {
		return Status{}, "", errors.New("no server to take the snapshot from")
	}
	for {
		var errs []error
		retry := true
		for _, addr := range servers {
			st, err := saveFrom(ctx, c, addr, path)
			if err == nil {
				return st, addr, nil
			}
			errs = append(errs, err)
			var netErr net.Error
			if !errors.Is(err, adminapi.ErrSnapshotUnavailable) && !errors.As(err, &netErr) {
				retry = false
			}
		}
		if !retry {
			return Status{}, "", errors.Join(errs...)
		}
		select {
		case <-ctx.Done():
			return Status{}, "", errors.Join(append(errs, ctx.Err())...)
		case <-time.After(retryEvery):
		}
	}
}

// saveFrom takes the snapshot from one server.
func saveFrom(ctx context.Context, c adminapi.Client, addr, path string) (Status, error) {
	stream, announced, err := c.Snapshot(ctx, addr)
	if err != nil {
		return Status{}, err
	}
	defer stream.Close()
	var tree *datatree.Tree
	info, err := snap.Receive(path, stream, func(zxid int64, body io.Reader) error {
		t, err := readTree(zxid, body)
		if err != nil {
			return err
		}
		if z := fmt.Sprintf("0x%x", zxid); z != announced {
			return fmt.Errorf("the server announced zxid %s, the snapshot holds %s", announced, z)
		}
		tree = t
		return nil
	})
	if err != nil {
		return Status{}, fmt.Errorf("snapshot from %s: %w", addr, err)
	}
	return statusOf(info, tree), nil
}

// readTree decodes a snapshot's body and checks that the tree is the
// state at zxid.
func readTree(zxid int64, body io.Reader) (*datatree.Tree, error) {
	t, err := datatree.ReadSnapshot(body)
	if err != nil {
		return nil, err
	}
	if t.LastZxid() != zxid {
		return nil, fmt.Errorf("the file is a snapshot at 0x%x of a tree at 0x%x", zxid, t.LastZxid())
	}
	return t, nil
}

func statusOf(info snap.Info, t *datatree.Tree) Status {
	return Status{Zxid: fmt.Sprintf("0x%x", info.Zxid), Znodes: t.NodeCount(), Sessions: len(t.Sessions()),
		Digest: fmt.Sprintf("0x%x", t.Digest()), Bytes: info.Size, Checksum: fmt.Sprintf("0x%08x", info.Checksum),
		ChecksumOK: true, FormatVersion: info.Version}
}

// Load reads the snapshot file at path, verifying its checksum, its tree's
// checksum and digest, and that the tree is the state at the file's zxid.
func Load(path string) (*datatree.Tree, Status, error) {
	var tree *datatree.Tree
	info, err := snap.ReadFile(path, func(zxid int64, body io.Reader) error {
		t, err := readTree(zxid, body)
		tree = t
		return err
	})
	if err != nil {
		return nil, Status{}, err
	}
	return tree, statusOf(info, tree), nil
}

// Inspect describes the snapshot file at path. A file that fails a check
// is described as far as it can be (its size) with ChecksumOK false, and
// the error says what failed.
func Inspect(path string) (Status, error) {
	_, st, err := Load(path)
	if err != nil {
		st = Status{ChecksumOK: false}
		if fi, serr := os.Stat(path); serr == nil {
			st.Bytes = fi.Size()
		}
	}
	return st, err
}
