package server

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// This file reads ZooKeeper's configuration format into a Config: the
// zoo.cfg keys Giraffe uses, an ensemble's server.N lines and the data
// directory's myid as ZooKeeper reads them, and Giraffe's own giraffe.*
// keys, which ZooKeeper would ignore.

// LoadConfigFile reads a configuration file into c. The format is that of
// ZooKeeper's zoo.cfg (Java properties: key=value, # comments), so an
// existing zoo.cfg works unchanged; keys Giraffe does not use are ignored
// and returned, sorted into ZooKeeper's and unknown ones, so the caller
// can log them (UnusedKeys.Err refuses unknown ones when strict).
func LoadConfigFile(path string, c *Config) (UnusedKeys, error) {
	ignored, err := loadConfigFile(path, c)
	return classifyUnused(ignored), err
}

func loadConfigFile(path string, c *Config) (ignored []string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	clientPortSet := false
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
		clientPortSet = clientPortSet || key == "clientPort"
		known, err := c.set(key, val)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %w", path, line, key, err)
		}
		if !known {
			ignored = append(ignored, key)
		}
	}
	if c.SecureClientPort > 0 && !clientPortSet {
		// As ZooKeeper: with only secureClientPort, clients speak TLS.
		c.ClientPort = NoClientPort
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
	case "admin.serverPort":
		// ZooKeeper's AdminServer commands are on the metrics port, which
		// this key opens when no metrics port key sets it.
		if c.MetricsPort == 0 {
			c.MetricsPort, err = strconv.Atoi(val)
		}
	case "admin.enableServer":
		var on bool
		on, err = strconv.ParseBool(val)
		c.NoAdminServer = !on
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
	case "enforceQuota", "zookeeper.enforceQuota":
		c.EnforceQuota, err = strconv.ParseBool(val)
	case "reconfigEnabled":
		c.ReconfigEnabled, err = strconv.ParseBool(val)
	case "skipACL", "zookeeper.skipACL":
		// ZooKeeper skips ACLs when the property is exactly "yes".
		c.SkipACL = val == "yes" || val == "true"
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
		return c.setTLS(key, val)
	}
	return true, err
}

// setTLS handles the TLS keys: the secure client port, sslQuorum, the
// x509 super user, and the ssl.* and ssl.quorum.* keys, which ZooKeeper
// takes from zoo.cfg or, with a "zookeeper." prefix, from system
// properties (both spellings are read here).
func (c *Config) setTLS(key, val string) (bool, error) {
	var err error
	switch key {
	case "secureClientPort":
		c.SecureClientPort, err = strconv.Atoi(val)
	case "secureClientPortAddress":
		c.SecureClientAddr = val
	case "sslQuorum":
		c.SSLQuorum, err = strconv.ParseBool(val)
	case "zookeeper.X509AuthenticationProvider.superUser", "X509AuthenticationProvider.superUser":
		c.X509SuperUser = val
	case "serverCnxnFactory", "zookeeper.serverCnxnFactory":
		// ZooKeeper needs its Netty factory for TLS; Giraffe has one kind
		// of connection, which speaks both.
	default:
		k := strings.TrimPrefix(key, "zookeeper.")
		if rest, ok := strings.CutPrefix(k, "ssl.quorum."); ok {
			return c.QuorumTLS.Set(rest, val)
		}
		if rest, ok := strings.CutPrefix(k, "ssl."); ok {
			return c.ClientTLS.Set(rest, val)
		}
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

// setEnsemble handles the ensemble keys of zoo.cfg: server.N lines in
// ZooKeeper's format (server.1=host:peerPort[:electionPort][;[clientHost:]clientPort];
// Giraffe uses one peer port and ignores the second) and giraffe.* keys,
// the admin port's and the namespaces (giraffe.namespace.NAME=strong|weak)
// among them.
func (c *Config) setEnsemble(key, val string) (bool, error) {
	if rest, ok := strings.CutPrefix(key, "giraffe.admin."); ok {
		id, err := members.ParseID(rest)
		if err != nil {
			return true, fmt.Errorf("bad server id in %s", key)
		}
		c.pendingAdmin = append(c.pendingAdmin, members.Member{ID: id, Admin: val})
		return true, nil
	}
	if name, ok := strings.CutPrefix(key, "giraffe.namespace."); ok {
		return true, c.DeclareNamespace(name, val)
	}
	if rest, ok := strings.CutPrefix(key, "server."); ok {
		id, err := members.ParseID(rest)
		if err != nil || id <= 0 || id > 255 {
			return true, fmt.Errorf("server id must be in [1,255]")
		}
		m, err := parseServerLine(id, val)
		if err != nil {
			return true, err
		}
		c.Ensemble.Members = append(c.Ensemble.Members, m)
		return true, nil
	}
	var err error
	switch key {
	case "giraffe.trees":
		c.Ensemble.Shape.Trees, err = strconv.Atoi(val)
	case "giraffe.children":
		c.Ensemble.Shape.Children, err = strconv.Atoi(val)
	case "giraffe.classic":
		c.Ensemble.Shape.Classic, err = strconv.ParseBool(val)
	case "giraffe.tickMs":
		var n int
		n, err = strconv.Atoi(val)
		c.Ensemble.Tick = time.Duration(n) * time.Millisecond
	case "giraffe.electionTicks":
		c.Ensemble.ElectionTicks, err = strconv.Atoi(val)
	case "giraffe.adminPort":
		c.AdminPort, err = strconv.Atoi(val)
	case "giraffe.adminAddress":
		c.AdminAddr = val
	case "giraffe.adminTokenFile":
		c.AdminTokenFile = val
	case "giraffe.faultInjection":
		c.FaultInjection, err = strconv.ParseBool(val)
	case "giraffe.weakMode":
		c.WeakMode, err = ParseWeakMode(val)
	case "giraffe.digestInterval":
		c.DigestInterval, err = strconv.Atoi(val)
		if err == nil && c.DigestInterval < 0 {
			err = fmt.Errorf("must not be negative")
		}
	case "giraffe.gcHeadroomMB":
		c.GCHeadroomMB, err = strconv.Atoi(val)
		if err == nil && c.GCHeadroomMB < 0 {
			err = fmt.Errorf("must not be negative")
		}
	case "giraffe.strictConfig":
		c.StrictConfig, err = strconv.ParseBool(val)
	default:
		return false, nil
	}
	return true, err
}

// parseServerLine parses the value of a server.N line.
func parseServerLine(id members.ID, val string) (members.Member, error) {
	m := members.Member{ID: id}
	addr, client, hasClient := strings.Cut(val, ";")
	parts := strings.Split(addr, ":")
	if len(parts) < 2 {
		return m, fmt.Errorf("expected host:peerPort, got %q", val)
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return m, fmt.Errorf("bad peer port %q", parts[1])
	}
	m.Peer = net.JoinHostPort(parts[0], parts[1])
	if hasClient {
		if !strings.Contains(client, ":") {
			client = net.JoinHostPort(parts[0], client)
		}
		m.Client = client
	}
	return m, nil
}

// readMyID reads dataDir/myid as ZooKeeper does, when serverId is not set.
func (c *Config) readMyID() error {
	if len(c.Ensemble.Members) == 1 {
		// As ZooKeeper with standaloneEnabled (its default): a single
		// server line is a standalone server.
		c.Ensemble.Members = nil
	}
	if c.ServerID != 0 || !c.Replicated() {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(c.DataDir, "myid"))
	if err != nil {
		return fmt.Errorf("ensemble member needs serverId or %s: %w", filepath.Join(c.DataDir, "myid"), err)
	}
	n, err := members.ParseID(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("myid: %w", err)
	}
	c.ServerID = n
	return nil
}
