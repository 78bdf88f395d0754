package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/tlsconf"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Config is everything a server needs to start. The zero value is not
// usable; start from DefaultConfig and override.
type Config struct {
	// DataDir holds snapshots (and the log unless DataLogDir is set).
	DataDir string
	// DataLogDir holds the transaction log; empty means DataDir.
	DataLogDir string
	// ClientAddr is the host the client port listens on ("" = all).
	ClientAddr string
	// ClientPort is the ZooKeeper client port; NoClientPort closes it,
	// which a server with a SecureClientPort may do (a zoo.cfg that sets
	// secureClientPort and no clientPort does).
	ClientPort int
	// SecureClientPort, when > 0, opens a second client port that speaks
	// the same protocol over TLS only (secureClientPort), configured by
	// ClientTLS. A client there that presents a certificate the trust
	// store accepts holds the id x509:<its subject>.
	SecureClientPort int
	// SecureClientAddr is the host the secure client port listens on
	// (secureClientPortAddress; "" = all).
	SecureClientAddr string
	// ClientTLS configures the secure client port: the ssl.* keys.
	ClientTLS tlsconf.Settings
	// SSLQuorum makes every link between ensemble members mutual TLS,
	// configured by QuorumTLS (sslQuorum).
	SSLQuorum bool
	// QuorumTLS configures the links between members: the ssl.quorum.*
	// keys. Its ClientAuth must stay Need: both members of a link prove
	// who they are.
	QuorumTLS tlsconf.Settings
	// X509SuperUser is the certificate subject whose holder bypasses every
	// ACL, as the super digest's does
	// (zookeeper.X509AuthenticationProvider.superUser).
	X509SuperUser string
	// MetricsPort serves Prometheus metrics on /metrics when > 0, and the
	// committed membership on /membership; it is read-only (GET and HEAD)
	// and listens on the host of ClientAddr.
	MetricsPort int
	// NoAdminServer turns off ZooKeeper's AdminServer commands, which the
	// metrics port (read-only ones) and the admin port serve under
	// /commands/ (admin.enableServer=false).
	NoAdminServer bool
	// AdminPort serves the admin endpoints of package adminapi (membership
	// changes, fault injection) when > 0 and AdminTokenFile is set: every
	// request must carry the token, so without one the port stays closed.
	AdminPort int
	// AdminAddr is the host the admin port listens on; "" means 127.0.0.1.
	// The members' giraffe.admin.N addresses must reach it.
	AdminAddr string
	// AdminTokenFile holds the admin token (adminapi.ReadTokenFile: one
	// word, in a file only its owner can access). A joining server also
	// presents it to the ensemble.
	AdminTokenFile string
	// FaultInjection lets the admin port's /faults inject faults into the
	// peer transport and stall fsyncs. For tests; off by default.
	FaultInjection bool
	// TickTime is the basic time unit; session timeouts default to
	// [2, 20] ticks as in ZooKeeper.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout bound the negotiated timeout.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration
	// MaxClientCnxns limits concurrent connections per client IP (0 = no limit).
	MaxClientCnxns int
	// MaxPacket is the largest frame accepted from a client (jute.maxbuffer).
	MaxPacket int
	// MaxDataBytes is the largest znode payload a write may carry.
	MaxDataBytes int
	// FourLetterWords lists the allowed four-letter words; "*" allows all.
	FourLetterWords []string
	// SuperDigest is "super:<base64 sha1>" as produced by DigestID; a
	// client that adds the matching digest auth bypasses every ACL.
	SuperDigest string
	// ReconfigEnabled lets clients change the membership with
	// ZooKeeper's reconfig (reconfigEnabled; off by default, as in
	// ZooKeeper, when it answers RECONFIGDISABLED).
	ReconfigEnabled bool
	// SkipACL skips the authorization of reconfig (zookeeper.skipACL=yes).
	// Giraffe reads it for reconfig only: every other ACL is still checked.
	SkipACL bool
	// EnforceQuota refuses, with QUOTAEXCEEDED, the writes that would
	// exceed a hard quota and logs those exceeding a soft one
	// (zookeeper.enforceQuota; off by default, as in ZooKeeper, when
	// quotas are only counted).
	EnforceQuota bool
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// SnapCount bounds the log entries between snapshots: a server
	// snapshots after between SnapCount/2 and SnapCount of them, drawn at
	// random each time (snapcount.go).
	SnapCount int
	// SnapRetainCount is how many snapshots (and the logs they need) purge keeps.
	SnapRetainCount int
	// PurgeInterval runs purge this often (0 = only at snapshot time).
	PurgeInterval time.Duration
	// ForceSync fsyncs the log before acknowledging writes. Turning it off
	// loses acknowledged writes on a machine crash; it exists for tests.
	ForceSync bool
	// ContainerCheckInterval is how often empty containers and expired TTL
	// nodes are looked for (znode.container.checkIntervalMs).
	ContainerCheckInterval time.Duration
	// ServerID is the high byte of session ids this server creates, and
	// this server's id in an ensemble (serverId, or dataDir/myid).
	ServerID members.ID
	// Ensemble makes the server a member of a replicated ensemble.
	Ensemble Ensemble
	// Namespaces are the declared namespaces (giraffe.namespace.NAME
	// keys, DeclareNamespace); every member of an ensemble must declare
	// the same (docs/namespaces.md).
	Namespaces nsmap.Table
	// WeakMode is when a weak namespace's writes are answered
	// (giraffe.weakMode; docs/namespaces.md).
	WeakMode WeakMode
	// DigestInterval is how many entries apart the members of an ensemble
	// with namespaces compare their namespaces' digests
	// (giraffe.digestInterval; 0 never; divergence.go).
	DigestInterval int
	// GCHeadroomMB bounds how far the heap may grow past its live data
	// before a collection, in MiB (giraffe.gcHeadroomMB; 0: GOGC alone
	// decides). It is a setting of the process: `giraffe server` applies
	// it (internal/gcheadroom); a program embedding servers applies it
	// itself, once.
	GCHeadroomMB int
	// StrictConfig refuses to start from a configuration file with keys
	// neither Giraffe nor ZooKeeper reads (giraffe.strictConfig; see
	// UnusedKeys.Err).
	StrictConfig bool
	// pendingAdmin holds giraffe.admin.N values until the server lines
	// they belong to have all been read.
	pendingAdmin []members.Member
	// adminToken is the content of AdminTokenFile, read by Validate.
	adminToken string
}

// NoClientPort as Config.ClientPort: no plain client port.
const NoClientPort = -1

// DefaultConfig returns ZooKeeper's defaults.
func DefaultConfig() Config {
	return Config{
		ClientPort:             2181,
		ClientTLS:              tlsconf.Defaults(false),
		QuorumTLS:              tlsconf.Defaults(true),
		TickTime:               2000 * time.Millisecond,
		MaxClientCnxns:         60,
		MaxPacket:              zkproto.DefaultMaxPacket,
		MaxDataBytes:           1 << 20,
		FourLetterWords:        []string{"srvr"},
		SnapCount:              100000,
		SnapRetainCount:        3,
		ForceSync:              true,
		ContainerCheckInterval: time.Minute,
		DigestInterval:         DefaultDigestInterval,
		GCHeadroomMB:           DefaultGCHeadroomMB,
	}
}

// DefaultGCHeadroomMB is Config.GCHeadroomMB's default: a tree of a few
// hundred MiB or less keeps GOGC's own headroom.
const DefaultGCHeadroomMB = 256

// DefaultDigestInterval is Config.DigestInterval's default.
const DefaultDigestInterval = 1024

// DeclareNamespace declares the top-level znode name a namespace of
// level "strong" or "weak", as the zoo.cfg line giraffe.namespace.NAME=LEVEL
// does; declaring a name again changes its level.
func (c *Config) DeclareNamespace(name, level string) error {
	l, err := nsmap.ParseLevel(level)
	if err != nil {
		return err
	}
	return c.Namespaces.Declare(name, l)
}

// sessionBounds returns the effective timeout bounds: ZooKeeper derives
// unset bounds from the tick time.
func (c *Config) sessionBounds() (lo, hi time.Duration) {
	lo, hi = c.MinSessionTimeout, c.MaxSessionTimeout
	if lo <= 0 {
		lo = 2 * c.TickTime
	}
	if hi <= 0 {
		hi = 20 * c.TickTime
	}
	return lo, hi
}

// LogDir returns where a standalone server keeps its transaction log:
// DataLogDir, or dataDir/log.
func (c *Config) LogDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return filepath.Join(c.DataDir, "log")
}

// ReplicaDir returns where an ensemble member keeps its durable state
// (package replica: identity, hard state, log, snapshots).
func (c *Config) ReplicaDir() string { return filepath.Join(c.DataDir, "replica") }

// SnapDir returns where a standalone server keeps its snapshots:
// dataDir/snap.
func (c *Config) SnapDir() string { return filepath.Join(c.DataDir, "snap") }

// fourLetterAllowed reports whether the whitelist admits word.
func (c *Config) fourLetterAllowed(word string) bool {
	for _, w := range c.FourLetterWords {
		if w == "*" || w == word {
			return true
		}
	}
	return false
}

// Validate reports the first setting that cannot work.
func (c *Config) Validate() error {
	switch {
	case c.DataDir == "":
		return fmt.Errorf("config: dataDir is required")
	case (c.ClientPort < 0 && c.ClientPort != NoClientPort) || c.ClientPort > 65535:
		return fmt.Errorf("config: clientPort %d out of range", c.ClientPort)
	case c.SecureClientPort < 0 || c.SecureClientPort > 65535:
		return fmt.Errorf("config: secureClientPort %d out of range", c.SecureClientPort)
	case c.ClientPort == NoClientPort && c.SecureClientPort == 0:
		return fmt.Errorf("config: neither clientPort nor secureClientPort is set")
	case c.SSLQuorum && c.QuorumTLS.ClientAuth != tlsconf.Need:
		return fmt.Errorf("config: ssl.quorum.clientAuth is %s; members always require each other's certificates (need)",
			c.QuorumTLS.ClientAuth)
	case c.TickTime <= 0:
		return fmt.Errorf("config: tickTime must be positive")
	case c.MaxPacket < 1024:
		return fmt.Errorf("config: jute.maxbuffer %d is too small", c.MaxPacket)
	case c.MaxDataBytes <= 0:
		return fmt.Errorf("config: maximum data size must be positive")
	case c.SnapCount <= 0:
		return fmt.Errorf("config: snapCount must be positive")
	case c.SnapRetainCount < 3:
		return fmt.Errorf("config: autopurge.snapRetainCount must be at least 3")
	case c.AdminPort < 0 || c.AdminPort > 65535:
		return fmt.Errorf("config: giraffe.adminPort %d out of range", c.AdminPort)
	}
	lo, hi := c.sessionBounds()
	if lo > hi {
		return fmt.Errorf("config: minSessionTimeout %v exceeds maxSessionTimeout %v", lo, hi)
	}
	if err := c.readMyID(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.validateEnsemble(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := c.loadAdminToken(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// loadAdminToken reads AdminTokenFile, when set, into adminToken. A file
// that cannot be trusted stops the server at start-up rather than leaving
// the admin port open to whoever could read it.
func (c *Config) loadAdminToken() error {
	c.adminToken = ""
	if c.AdminTokenFile == "" {
		return nil
	}
	tok, err := adminapi.ReadTokenFile(c.AdminTokenFile)
	c.adminToken = tok
	return err
}

// adminHost returns the host the admin port listens on.
func (c *Config) adminHost() string {
	if c.AdminAddr == "" {
		return "127.0.0.1"
	}
	return c.AdminAddr
}

// The membership types of internal/members, named here so that programs
// outside this module (package embed's users) can configure an ensemble.
type (
	// Member is one server of an ensemble and its addresses.
	Member = members.Member
	// Shape arranges an ensemble: classic, or a forest of groups.
	Shape = members.Shape
	// ID is a server's id in its ensemble.
	ID = members.ID
)

// Ensemble configures replication. With no Members the server is standalone.
type Ensemble struct {
	// Members are the servers of the ensemble: zoo.cfg's server.N and
	// giraffe.admin.N lines, or, for a joined server, the members the
	// ensemble had when it joined.
	Members []members.Member
	// Shape arranges them: Shape.Trees groups, each relaying down a tree
	// of fan-out Shape.Children, or (Shape.Classic, or Trees <= 1) one
	// group with a star, a leader-centric protocol like Zab. Validate sets
	// Shape.Nodes to the number of Members.
	Shape members.Shape
	// Tick is the protocol tick; heartbeats go every 2 ticks and a silent
	// coordinator or leader is suspected after ElectionTicks.
	Tick          time.Duration
	ElectionTicks int
	// Joined, when set, is the voting configuration this server was given
	// when it joined a running ensemble (giraffe server --join): its log
	// starts empty, and the configuration that admitted it is where it
	// starts from. Servers of the initial ensemble derive theirs from the
	// server lines (Voters).
	Joined *quorum.Config
	// ClusterName, when set, is the name peers present in their handshake
	// (a joined server takes the ensemble's); otherwise it is derived from
	// the server lines.
	ClusterName string
}

// Replicated reports whether the configuration describes an ensemble.
func (c *Config) Replicated() bool { return len(c.Ensemble.Members) > 0 }

func (c *Config) validateEnsemble() error {
	for _, a := range c.pendingAdmin {
		for i := range c.Ensemble.Members {
			if c.Ensemble.Members[i].ID == a.ID {
				c.Ensemble.Members[i].Admin = a.Admin
			}
		}
	}
	c.pendingAdmin = nil
	if !c.Replicated() {
		return nil
	}
	seen := map[members.ID]bool{}
	self := false
	for _, p := range c.Ensemble.Members {
		if seen[p.ID] {
			return fmt.Errorf("server.%d given twice", p.ID)
		}
		seen[p.ID] = true
		self = self || p.ID == c.ServerID
	}
	if !self {
		return fmt.Errorf("this server (id %d) is not among the server.N lines", c.ServerID)
	}
	e := &c.Ensemble
	e.Shape.Nodes = len(e.Members)
	if e.Shape.Trees <= 1 || len(e.Members) < e.Shape.Trees {
		e.Shape.Classic = true
	}
	if !e.Shape.Classic && e.Shape.Children < 1 {
		return errors.New("giraffe.children must be >= 1")
	}
	if e.Tick <= 0 {
		e.Tick = 25 * time.Millisecond
	}
	if e.ElectionTicks <= 0 {
		e.ElectionTicks = 8
	}
	if e.ElectionTicks <= 4 {
		return errors.New("giraffe.electionTicks must be > 4")
	}
	return nil
}

// Self returns this server's entry among the members.
func (c *Config) Self() members.Member {
	for _, m := range c.Ensemble.Members {
		if m.ID == c.ServerID {
			return m
		}
	}
	return members.Member{}
}

// Voters returns the voting configuration the ensemble starts with: the
// one it was given on joining, or the groups members.Voters derives from
// the server lines.
func (e *Ensemble) Voters() (quorum.Config, error) {
	if e.Joined != nil {
		return *e.Joined, nil
	}
	ids := make([]members.ID, 0, len(e.Members))
	for _, m := range e.Members {
		ids = append(ids, m.ID)
	}
	return members.Voters(e.Shape, ids)
}
