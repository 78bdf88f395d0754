package client

import (
	"context"
	"log/slog"
	"net"
	"time"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// Option configures Connect.
type Option func(*config)

// DialFunc opens a transport connection to addr (host:port).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

type config struct {
	sessionTimeout time.Duration
	shuffle        bool
	canBeReadOnly  bool
	dial           DialFunc
	log            *slog.Logger
	maxPacket      int
	auths          []authInfo
}

// Defaults. The session timeout is what the client asks for; the server
// clamps it to its [minSessionTimeout, maxSessionTimeout].
const (
	DefaultSessionTimeout = 10 * time.Second
	// maxReplyBytes bounds one reply frame, so a corrupt length prefix
	// cannot make the client allocate without limit. It is generous
	// because a getChildren on a large node may exceed jute.maxbuffer.
	maxReplyBytes = 64 << 20
)

func defaultConfig() config {
	var d net.Dialer
	return config{
		sessionTimeout: DefaultSessionTimeout,
		shuffle:        true,
		dial:           d.DialContext,
		log:            slog.New(slog.DiscardHandler),
		maxPacket:      zkproto.DefaultMaxPacket,
	}
}

// WithSessionTimeout sets the session timeout the client asks for. Pings
// go out after a third of the negotiated timeout of silence, and a
// connection that has been silent for two thirds of it is dropped, as in
// ZooKeeper's ClientCnxn.
func WithSessionTimeout(d time.Duration) Option {
	return func(c *config) { c.sessionTimeout = d }
}

// WithoutShuffle keeps the server list in the given order. By default it
// is shuffled, so that clients spread over the servers; tests disable it to
// know which server is tried first.
func WithoutShuffle() Option { return func(c *config) { c.shuffle = false } }

// WithCanBeReadOnly lets the client accept a read-only server (the
// readOnly flag of the ConnectRequest). The session is then in
// StateConnectedReadOnly and writes fail with NOTREADONLY.
func WithCanBeReadOnly() Option { return func(c *config) { c.canBeReadOnly = true } }

// WithDialer replaces the TCP dialer (for proxies, TLS wrappers or tests).
func WithDialer(d DialFunc) Option { return func(c *config) { c.dial = d } }

// WithLogger sets the logger for connection events; by default nothing is
// logged.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.log = l
		}
	}
}

// WithMaxPacketSize sets the largest request frame the client sends; the
// default is jute.maxbuffer's default, which servers enforce.
func WithMaxPacketSize(n int) Option { return func(c *config) { c.maxPacket = n } }

// WithAuth adds credentials that are sent on every connection before any
// request, so that even the first request runs with them (zkCli's
// -auth). Several may be given.
func WithAuth(scheme string, auth []byte) Option {
	return func(c *config) { c.auths = append(c.auths, authInfo{scheme: scheme, auth: auth}) }
}

// authInfo is one set of credentials, replayed on every reconnection.
type authInfo struct {
	scheme string
	auth   []byte
}
