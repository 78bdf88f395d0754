package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/giraffe-coord/giraffe/internal/storage/snap"
	"github.com/giraffe-coord/giraffe/internal/txn"
)

// The backup commands of ZooKeeper 3.9's AdminServer, served on the
// authenticated admin port only (commands.go):
//
//   - GET /commands/snapshot (alias snap) takes a snapshot of the committed
//     tree and streams it as application/octet-stream, in package snap's
//     file format: the bytes `giraffe snapshot save` keeps and `giraffe
//     snapshot restore` installs. The headers last_zxid (0x and hex digits,
//     the zxid of the state) and snapshot_size (bytes) are ZooKeeper's.
//     ?streaming=false takes the snapshot but answers only the headers and
//     the JSON object (last_zxid, snapshot_size), as ZooKeeper does.
//   - POST /commands/restore (alias rest) is answered 501: ZooKeeper
//     replaces the live server's database with the snapshot posted, which
//     a member of a Group Paxos ensemble cannot do without forgetting
//     promises it made; Giraffe restores offline, into a fresh data
//     directory (`giraffe snapshot restore`, docs/operations.md).
//
// A snapshot holds every write acknowledged before the request arrived,
// at this server or at any other member: the command takes a place in the
// write order as a client's sync does (behind every write submitted
// before it standalone, a marker entry through the log in an ensemble),
// and the tree is serialized when that place is applied, with the tree
// locked, so the snapshot is the state at exactly one zxid, at or after
// every write committed before the request. ZooKeeper's snapshot is
// whatever the server has applied, which on a lagging follower may miss
// acknowledged writes.
//
// One snapshot is taken at a time; a request while another is under way
// is answered 429. (ZooKeeper allows one per admin.rateLimiterIntervalInMS,
// five minutes by default. A snapshot costs what an automatic one costs,
// and only holders of the admin token can ask, so Giraffe bounds how many
// run, not how often.)

// Headers of the snapshot command's answer, ZooKeeper's names.
const (
	headerLastZxid     = "last_zxid"
	headerSnapshotSize = "snapshot_size"
)

// snapshotTimeout bounds how long the command waits for its place in the
// order: an ensemble without a leader answers an error rather than hang.
const snapshotTimeout = 30 * time.Second

// errSnapshotAbandoned is the error of a snapshot whose marker entry a
// leader change lost: whether it would have committed is unknown.
var errSnapshotAbandoned = errors.New("a leader change lost the snapshot's place in the order; ask again")

// errStopping is the error of a snapshot asked of a server that stops.
var errStopping = errors.New("the server is stopping")

// committedSnapshot is a serialized tree and the zxid of its state.
type committedSnapshot struct {
	zxid int64
	body []byte
	err  error
}

// snapshotCommitted serializes the tree (datatree's snapshot format) at a
// point at or after every write committed before the call, and returns it
// with the zxid of its state. The state is fixed when that point is
// applied and written without holding up the applier (datatree's
// SnapshotWriter), unless the server's own snapshot is being written
// then.
func (s *Server) snapshotCommitted(ctx context.Context) (committedSnapshot, error) {
	done := make(chan committedSnapshot, 1)
	// applied and abandoned run in the applier; neither may block it.
	send := func(c committedSnapshot) {
		select {
		case done <- c:
		default:
		}
	}
	pr := &proposal{
		sync: true,
		applied: func(txn.Result, *txn.Entry) {
			tree, zxid := s.tree, s.tree.LastZxid()
			w, err := tree.BeginSnapshot()
			if err != nil {
				// The server's own snapshot is being written: serialize
				// this one here, with the tree locked.
				var buf bytes.Buffer
				err := tree.WriteSnapshot(&buf)
				send(committedSnapshot{zxid: zxid, body: buf.Bytes(), err: err})
				return
			}
			// Written a chunk at a time beside the applier, and closed
			// whether or not anyone still waits for it.
			go func() {
				var buf bytes.Buffer
				err := s.writeSnapshot(w, &buf)
				send(committedSnapshot{zxid: zxid, body: buf.Bytes(), err: err})
			}()
		},
		abandoned: func() { send(committedSnapshot{err: errSnapshotAbandoned}) },
	}
	if !s.pipe.submit(pr) {
		return committedSnapshot{}, errStopping
	}
	select {
	case c := <-done:
		return c, c.err
	case <-ctx.Done():
		return committedSnapshot{}, fmt.Errorf("waiting for the snapshot's place in the order: %w", ctx.Err())
	case <-s.done:
		return committedSnapshot{}, errStopping
	}
}

// serveSnapshot answers the snapshot command.
func (s *Server) serveSnapshot(w http.ResponseWriter, r *http.Request) {
	const primary = "snapshot"
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeCommand(w, http.StatusMethodNotAllowed, commandAnswer(primary, nil, "GET only"))
		return
	}
	streaming := true
	if v := r.URL.Query().Get("streaming"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeCommand(w, http.StatusBadRequest, commandAnswer(primary, nil, "streaming must be true or false"))
			return
		}
		streaming = b
	}
	if !s.snapshotBusy.CompareAndSwap(false, true) {
		s.log.Warn("snapshot command refused: another snapshot is being taken", "remote", r.RemoteAddr)
		writeCommand(w, http.StatusTooManyRequests, commandAnswer(primary, nil, "another snapshot is being taken"))
		return
	}
	defer s.snapshotBusy.Store(false)
	ctx, cancel := context.WithTimeout(r.Context(), snapshotTimeout)
	defer cancel()
	start := time.Now()
	c, err := s.snapshotCommitted(ctx)
	if err != nil {
		s.log.Warn("snapshot command failed", "err", err, "remote", r.RemoteAddr)
		writeCommand(w, http.StatusServiceUnavailable, commandAnswer(primary, nil, err.Error()))
		return
	}
	zxid := fmt.Sprintf("0x%x", c.zxid)
	size := snap.FramedSize(int64(len(c.body)))
	w.Header().Set(headerLastZxid, zxid)
	w.Header().Set(headerSnapshotSize, strconv.FormatInt(size, 10))
	if !streaming {
		writeCommand(w, http.StatusOK, commandAnswer(primary, fields{{"last_zxid", zxid}, {"snapshot_size", size}}, nil))
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := snap.Encode(w, c.zxid, func(bw io.Writer) error {
		_, err := bw.Write(c.body)
		return err
	}); err != nil {
		s.log.Warn("snapshot command: streaming failed", "zxid", zxid, "err", err, "remote", r.RemoteAddr)
		return
	}
	s.log.Info("snapshot streamed", "zxid", zxid, "bytes", size, "took", time.Since(start), "remote", r.RemoteAddr)
}

// serveRestore answers the restore command: not here (see above).
func (s *Server) serveRestore(w http.ResponseWriter, r *http.Request) {
	writeCommand(w, http.StatusNotImplemented, commandAnswer("restore", nil,
		"a live server's state is not replaced: stop it and restore offline with "+
			"`giraffe snapshot restore FILE --data-dir D` (docs/operations.md)"))
}
