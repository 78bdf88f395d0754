// Package embed runs a Giraffe server inside a Go program (the local interface of the Giraffe
// paper) and connects the program to it in-process.
//
// The server is the same one `giraffe server` runs: standalone, or a member
// of an ensemble when its Config names peers or when it joins a running one
// (Join), with the same log, snapshots and recovery. Connect opens a session over an in-process pipe served by
// server.ServeConn, so the program uses package client and the blocking
// recipes (recipes.NewQueueLock(conn, path).Lock(ctx), Barrier.Wait(ctx),
// ...) with exactly the semantics a remote client has, without a network
// hop. Other processes can still reach the server on its client port.
//
//	srv, err := embed.Start(embed.Standalone(dir), nil)
//	...
//	defer srv.Close()
//	conn, err := srv.Connect(ctx)
//	...
//	lock := recipes.NewQueueLock(conn, "/locks/jobs")
//	if err := lock.Lock(ctx); err != nil { ... }
//	defer lock.Unlock(ctx)
package embed

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/server"
)

// Server is a Giraffe server running in this process.
type Server struct {
	srv *server.Server
}

// Standalone returns the configuration of a standalone server keeping its
// data in dir, with ZooKeeper's defaults, its client port on an ephemeral
// port of 127.0.0.1 (Addr tells which) and fsync on.
func Standalone(dir string) server.Config {
	cfg := server.DefaultConfig()
	cfg.DataDir = dir
	cfg.ClientAddr = "127.0.0.1"
	cfg.ClientPort = 0
	return cfg
}

// Start creates the server described by cfg (recovering whatever its data
// directory holds) and starts serving. A nil logger discards the server's
// log.
func Start(cfg server.Config, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.New(cfg, logger)
	if err != nil {
		return nil, err
	}
	if err := srv.Start(); err != nil {
		srv.Close()
		return nil, err
	}
	return &Server{srv: srv}, nil
}

// Join starts a server that joins a running ensemble through the admin
// port of any member, j.Admin, as `giraffe server --join` does: the
// ensemble's leader adds it, by one configuration change through the log,
// to the group the forest gives it, and it catches up with the ensemble's
// data before it serves. cfg needs a data directory, an AdminPort (the
// ensemble forwards membership changes there when the server leads), the
// ensemble's AdminTokenFile (the join presents its token) and j.PeerPort
// for the server-to-server traffic; the ensemble decides the rest. A server whose data directory records an earlier join restarts
// as that member, and j may then be zero. A nil logger discards the
// server's log.
func Join(ctx context.Context, cfg server.Config, j server.Join, logger *slog.Logger) (*Server, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.StartJoining(ctx, cfg, j, logger)
	if err != nil {
		return nil, err
	}
	return &Server{srv: srv}, nil
}

// inProcess is the address the in-process connection is dialed at; the
// client needs one, the dialer ignores it.
const inProcess = "in-process:0"

// Connect opens a session on the server over an in-process pipe and waits
// until it is established or ctx ends. The options are package client's;
// WithDialer is overridden. If the server drops the connection (an
// ensemble member does when the leader changes), the client reconnects
// over a new pipe and keeps its session, as it would over TCP.
func (s *Server) Connect(ctx context.Context, opts ...client.Option) (*client.Conn, error) {
	opts = append(append([]client.Option{}, opts...), client.WithDialer(s.dial), client.WithoutShuffle())
	return client.Connect(ctx, []string{inProcess}, opts...)
}

// errClosed is returned when dialing a server that has stopped.
var errClosed = errors.New("embed: server closed")

// dial hands one end of a new pipe to the server and returns the other.
func (s *Server) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	select {
	case <-s.srv.Done():
		return nil, errClosed
	default:
	}
	local, remote := net.Pipe()
	s.srv.ServeConn(remote)
	return local, nil
}

// Addr returns the client port's address, for other processes.
func (s *Server) Addr() net.Addr { return s.srv.Addr() }

// Server returns the server itself (for its metrics and admin addresses,
// Done and Err).
func (s *Server) Server() *server.Server { return s.srv }

// Close stops the server; sessions connected in-process see their
// connection end, as remote ones do.
func (s *Server) Close() error { return s.srv.Close() }
