package server

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
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
	// ClientPort is the ZooKeeper client port.
	ClientPort int
	// MetricsPort serves Prometheus metrics on /metrics when > 0.
	MetricsPort int
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
	// ExtendedTypes enables TTL nodes (zookeeper.extendedTypesEnabled).
	ExtendedTypes bool
	// SnapCount is the number of log entries between snapshots.
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
	// pendingAdmin holds giraffe.admin.N values until the server lines
	// they belong to have all been read.
	pendingAdmin []members.Member
}

// DefaultConfig returns ZooKeeper's defaults.
func DefaultConfig() Config {
	return Config{
		ClientPort:             2181,
		TickTime:               2000 * time.Millisecond,
		MaxClientCnxns:         60,
		MaxPacket:              zkproto.DefaultMaxPacket,
		MaxDataBytes:           1 << 20,
		FourLetterWords:        []string{"srvr"},
		SnapCount:              100000,
		SnapRetainCount:        3,
		ForceSync:              true,
		ContainerCheckInterval: time.Minute,
	}
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

// logDir returns where the transaction log lives.
func (c *Config) logDir() string {
	if c.DataLogDir != "" {
		return c.DataLogDir
	}
	return filepath.Join(c.DataDir, "log")
}

// snapDir returns where snapshots live.
func (c *Config) snapDir() string { return filepath.Join(c.DataDir, "snap") }

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
	case c.ClientPort < 0 || c.ClientPort > 65535:
		return fmt.Errorf("config: clientPort %d out of range", c.ClientPort)
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
	return nil
}

// LoadConfigFile reads a configuration file into c. The format is that of
// ZooKeeper's zoo.cfg (Java properties: key=value, # comments), so an
// existing zoo.cfg works unchanged; keys Giraffe does not use are ignored
// with their names returned so the caller can log them.
func LoadConfigFile(path string, c *Config) (ignored []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		i := strings.IndexAny(text, "=:")
		if i < 0 {
			return nil, fmt.Errorf("%s:%d: expected key=value", path, line)
		}
		key := strings.TrimSpace(text[:i])
		val := strings.TrimSpace(text[i+1:])
		known, err := c.set(key, val)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, line, key, err)
		}
		if !known {
			ignored = append(ignored, key)
		}
	}
	return ignored, sc.Err()
}

// set applies one configuration key; it reports whether the key is known.
func (c *Config) set(key, val string) (bool, error) {
	ms := func() (time.Duration, error) {
		n, err := strconv.Atoi(val)
		return time.Duration(n) * time.Millisecond, err
	}
	var err error
	switch key {
	case "dataDir":
		c.DataDir = val
	case "dataLogDir":
		c.DataLogDir = val
	case "clientPort":
		c.ClientPort, err = strconv.Atoi(val)
	case "clientPortAddress":
		c.ClientAddr = val
	case "metricsPort", "metricsProvider.httpPort":
		c.MetricsPort, err = strconv.Atoi(val)
	case "tickTime":
		c.TickTime, err = ms()
	case "minSessionTimeout":
		c.MinSessionTimeout, err = ms()
	case "maxSessionTimeout":
		c.MaxSessionTimeout, err = ms()
	case "maxClientCnxns":
		c.MaxClientCnxns, err = strconv.Atoi(val)
	case "jute.maxbuffer":
		c.MaxPacket, err = parseInt(val)
	case "maxDataBytes":
		c.MaxDataBytes, err = parseInt(val)
	case "4lw.commands.whitelist":
		c.FourLetterWords = nil
		for _, w := range strings.Split(val, ",") {
			if w = strings.TrimSpace(w); w != "" {
				c.FourLetterWords = append(c.FourLetterWords, w)
			}
		}
	case "zookeeper.DigestAuthenticationProvider.superDigest", "superDigest":
		c.SuperDigest = val
	case "zookeeper.extendedTypesEnabled", "extendedTypesEnabled":
		c.ExtendedTypes, err = strconv.ParseBool(val)
	case "snapCount":
		c.SnapCount, err = strconv.Atoi(val)
	case "autopurge.snapRetainCount":
		c.SnapRetainCount, err = strconv.Atoi(val)
	case "autopurge.purgeInterval":
		var h int
		h, err = strconv.Atoi(val)
		c.PurgeInterval = time.Duration(h) * time.Hour
	case "forceSync", "zookeeper.forceSync":
		c.ForceSync = val != "no" && val != "false"
	case "znode.container.checkIntervalMs":
		c.ContainerCheckInterval, err = ms()
	case "serverId":
		c.ServerID, err = members.ParseID(val)
	default:
		return c.setEnsemble(key, val)
	}
	return true, err
}

// parseInt accepts decimal or 0x-prefixed hexadecimal, as jute.maxbuffer
// is often written in hex.
func parseInt(s string) (int, error) {
	n, err := strconv.ParseInt(s, 0, 64)
	return int(n), err
}
