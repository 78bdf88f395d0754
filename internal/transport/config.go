package transport

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
)

// Defaults of the Config fields left zero.
const (
	// DefaultMaxFrameSize bounds one frame: a message, or a chunk of a
	// message that carries a snapshot.
	DefaultMaxFrameSize = 512 << 20
	// DefaultMaxMessageSize admits snapshots of tens of gigabytes, more
	// than a server's memory holds.
	DefaultMaxMessageSize = 64 << 30
	// DefaultQueueLen is the per-peer bound of queued messages.
	DefaultQueueLen = 1024
	// DefaultQueueBytes is the per-peer byte budget of queued messages.
	DefaultQueueBytes = 64 << 20
	// DefaultMaxPeers bounds the address book's growth through
	// handshakes (Config.MaxPeers), well above any ensemble's size.
	DefaultMaxPeers = 1024
	// DefaultRecvQueueLen bounds the messages received but not yet taken
	// from Recv.
	DefaultRecvQueueLen = 4096
	// DefaultRecvQueueBytes bounds the bytes received but not yet taken
	// from Recv.
	DefaultRecvQueueBytes = 256 << 20
	// DefaultDialTimeout bounds one connection attempt.
	DefaultDialTimeout = time.Second
	// DefaultHandshakeTimeout bounds the hello/ack exchange.
	DefaultHandshakeTimeout = 2 * time.Second
	// DefaultWriteTimeout is the base deadline of one batch write; large
	// batches get more (see minWriteRate).
	DefaultWriteTimeout = 10 * time.Second
	// DefaultBackoffMin and DefaultBackoffMax bound the pause between
	// connection attempts to one peer.
	DefaultBackoffMin = 10 * time.Millisecond
	DefaultBackoffMax = time.Second
)

// minFrameSize is the smallest MaxFrameSize accepted: below it ordinary
// messages with a few entries would not fit.
const minFrameSize = 4096

// Config configures a Transport.
type Config struct {
	// ID is this server's ID; never zero.
	ID gpaxos.ID
	// ListenAddr is the TCP address to listen on for peers ("host:port";
	// port 0 picks a free port, see Transport.Addr).
	ListenAddr string
	// Peers maps the ID of every other server to its listen address. An
	// entry for ID itself is ignored. Transport.SetPeers replaces it.
	Peers map[gpaxos.ID]string
	// Cluster names the ensemble; a peer presenting another name in its
	// handshake is refused, so that two ensembles sharing hosts cannot
	// talk to each other by a mistyped address.
	Cluster string
	// Namespaces is the namespace table this server was configured with;
	// its hash travels in the handshake, and a peer with another table
	// is refused, with a reason naming both tables that both servers log.
	Namespaces nsmap.Table
	// AcceptUnknownPeers lets servers missing from Peers connect (their
	// messages are delivered). One whose handshake names the address it
	// listens on joins the address book, so that replies reach it: a
	// server that missed the configuration changes adding others must
	// still hear them and answer (an election may need its vote). Off,
	// such connections are refused.
	AcceptUnknownPeers bool
	// MaxPeers bounds what unknown peers add to the address book: once it
	// holds MaxPeers servers, an unknown one is refused, so that
	// handshakes naming ever new IDs cannot grow it without end. Zero
	// means DefaultMaxPeers.
	MaxPeers int

	// MaxFrameSize bounds a frame, sent or received: an encoded message,
	// except one carrying a snapshot, which goes in chunk frames of up to
	// a mebibyte. Members must agree on it. A history without a snapshot
	// must fit in one frame; compaction (snapCount) keeps it far below.
	MaxFrameSize int
	// MaxMessageSize bounds a message carrying a snapshot, sent or
	// received.
	MaxMessageSize int
	// QueueLen and QueueBytes bound each peer's queue of messages waiting
	// to be written. A single message larger than QueueBytes is still
	// queued when the queue is empty, so that snapshots can be sent.
	QueueLen   int
	QueueBytes int
	// RecvQueueLen and RecvQueueBytes bound the received messages waiting
	// for the Recv channel's reader; when full, connections stop being
	// read. A single larger message is admitted into an empty queue.
	RecvQueueLen   int
	RecvQueueBytes int

	// DialTimeout bounds one connection attempt; HandshakeTimeout the
	// hello/ack exchange (both ways, so a silent client is dropped);
	// WriteTimeout the write of one batch, plus one second per 8 MiB.
	DialTimeout      time.Duration
	HandshakeTimeout time.Duration
	WriteTimeout     time.Duration
	// BackoffMin and BackoffMax bound the jittered exponential pause
	// between connection attempts to one peer (reset after a success).
	BackoffMin time.Duration
	BackoffMax time.Duration

	// TLS, when set, makes every connection mutual TLS: the acceptor
	// runs the TLS handshake with TLS.Server before the hello, the dialer
	// with TLS.Client. A handshake that fails (a certificate the other
	// side's trust store does not accept, or none) ends the connection
	// before any message, with a log line on the side that saw it fail.
	TLS TLSConfigs

	// FaultInjection gives the transport a Faults object (Transport.Faults);
	// without it the fault hooks on the message paths do nothing, so a
	// production server has no way to drop, delay or pause its traffic.
	FaultInjection bool
	// FaultSeed seeds the random decisions of Faults; zero picks a random
	// seed.
	FaultSeed uint64
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
}

// TLSConfigs gives the TLS configuration of each new connection, so that
// certificates can change between connections (package tlsconf's Source
// implements it).
type TLSConfigs interface {
	// Server configures a connection accepted from remoteIP. It must
	// require and verify the peer's certificate.
	Server(remoteIP string) *tls.Config
	// Client configures a connection dialed to host; it presents this
	// server's certificate and verifies the peer's.
	Client(host string) *tls.Config
}

// withDefaults returns c with zero fields replaced by their defaults, or an
// error naming the first invalid field.
func (c Config) withDefaults() (Config, error) {
	if c.ID == gpaxos.None {
		return c, errors.New("transport: Config.ID must not be zero")
	}
	if c.ListenAddr == "" {
		return c, errors.New("transport: Config.ListenAddr is empty")
	}
	if c.Cluster == "" || len(c.Cluster) > maxClusterName {
		return c, fmt.Errorf("transport: Config.Cluster must have 1 to %d bytes", maxClusterName)
	}
	if err := checkPeers(c.Peers); err != nil {
		return c, err
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxFrameSize, DefaultMaxFrameSize)
	def(&c.MaxMessageSize, DefaultMaxMessageSize)
	def(&c.QueueLen, DefaultQueueLen)
	def(&c.QueueBytes, DefaultQueueBytes)
	def(&c.MaxPeers, DefaultMaxPeers)
	def(&c.RecvQueueLen, DefaultRecvQueueLen)
	def(&c.RecvQueueBytes, DefaultRecvQueueBytes)
	defDur(&c.DialTimeout, DefaultDialTimeout)
	defDur(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	defDur(&c.WriteTimeout, DefaultWriteTimeout)
	defDur(&c.BackoffMin, DefaultBackoffMin)
	defDur(&c.BackoffMax, DefaultBackoffMax)
	if c.MaxFrameSize < minFrameSize || int64(c.MaxFrameSize) > math.MaxUint32 {
		return c, fmt.Errorf("transport: Config.MaxFrameSize %d outside [%d, %d]", c.MaxFrameSize, minFrameSize, uint32(math.MaxUint32))
	}
	if c.MaxMessageSize < c.MaxFrameSize {
		return c, fmt.Errorf("transport: Config.MaxMessageSize %d below MaxFrameSize %d", c.MaxMessageSize, c.MaxFrameSize)
	}
	if c.QueueLen < 0 || c.QueueBytes < 0 || c.RecvQueueLen < 0 || c.RecvQueueBytes < 0 {
		return c, errors.New("transport: negative queue bound")
	}
	if c.DialTimeout < 0 || c.HandshakeTimeout < 0 || c.WriteTimeout < 0 || c.BackoffMin < 0 || c.BackoffMax < c.BackoffMin {
		return c, errors.New("transport: negative timeout or BackoffMax < BackoffMin")
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

func checkPeers(peers map[gpaxos.ID]string) error {
	for id, addr := range peers {
		if id == gpaxos.None {
			return errors.New("transport: peer ID zero")
		}
		if addr == "" {
			return fmt.Errorf("transport: peer %d has no address", id)
		}
	}
	return nil
}
