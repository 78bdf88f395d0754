package server

import (
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
)

// This file tells a zoo.cfg key that ZooKeeper reads but Giraffe has no
// use for (initLimit: Giraffe's timers are its own) from a key nothing
// reads, which is most likely a typo that would otherwise cost the
// setting silently.

// UnusedKeys are the keys of a configuration file that Giraffe does not
// apply.
type UnusedKeys struct {
	// ZooKeeper are keys ZooKeeper reads that Giraffe has no use for.
	ZooKeeper []string
	// Unknown are keys neither ZooKeeper nor Giraffe reads.
	Unknown []UnknownKey
}

// UnknownKey is a key nothing reads, with the known key nearest to it in
// spelling when one is near enough to be what was meant.
type UnknownKey struct {
	Key, Suggestion string
}

// Count is the number of unused keys.
func (u UnusedKeys) Count() int { return len(u.ZooKeeper) + len(u.Unknown) }

// Err refuses the unknown keys when strict (giraffe.strictConfig=true or
// --strict-config): a misspelt key must not cost its setting silently.
func (u UnusedKeys) Err(strict bool) error {
	if !strict || len(u.Unknown) == 0 {
		return nil
	}
	names := make([]string, len(u.Unknown))
	for i, k := range u.Unknown {
		names[i] = k.String()
	}
	return fmt.Errorf("unknown configuration keys (strict configuration): %s", strings.Join(names, ", "))
}

// String names the key and what it may have meant.
func (u UnknownKey) String() string {
	if u.Suggestion == "" {
		return u.Key
	}
	return u.Key + " (did you mean " + u.Suggestion + "?)"
}

// zooKeeperKeys are the keys ZooKeeper's server reads from zoo.cfg (its
// QuorumPeerConfig, and the system properties the administrator's guide
// documents, which zoo.cfg may set without their "zookeeper." prefix)
// that Giraffe does not use.
var zooKeeperKeys = []string{
	"initLimit", "syncLimit", "connectToLearnerMasterLimit", "electionAlg",
	"quorumListenOnAllIPs", "peerType", "syncEnabled", "dynamicConfigFile",
	"standaloneEnabled", "portUnification", "client.portUnification",
	"sslQuorumReloadCertFiles", "localSessionsEnabled", "localSessionsUpgradingEnabled",
	"observerMasterPort", "clientPortListenBacklog", "quorum.cnxn.threads.size",
	"oraclePath", "snapSizeLimitInKb", "txnLogSizeLimitInKb", "preAllocSize",
	"globalOutstandingLimit", "commitLogCount", "maxResponseCacheSize",
	"maxGetChildrenResponseCacheSize", "fsync.warningthresholdms", "leaderServes",
	"cnxTimeout", "electionPortBindRetry", "flushDelay", "maxWriteQueuePollTime",
	"maxBatchSize", "requestThrottleLimit", "requestThrottleStallTime",
	"requestThrottleDropStale", "requestStaleLatencyCheck", "requestStaleConnectionCheck",
	"learner.asyncSending", "learner.closeSocketAsync", "leader.closeSocketAsync",
	"digest.enabled", "snapshot.trust.empty", "snapshot.compression.method",
	"serializeLastProcessedZxid.enabled", "audit.enable", "sessionRequireClientSASLAuth",
	"enforce.auth.enabled", "enforce.auth.schemes", "requireClientAuthScheme",
	"admin.serverAddress", "admin.commandURL", "admin.idleTimeout",
	"admin.forceHttps", "admin.needClientAuth", "admin.portUnification",
	"netty.server.outstandingHandshake.limit", "netty.server.earlyDropSecureConnectionHandshakes",
	"watchManagerName", "watcherCleanThreshold", "watcherCleanIntervalInSeconds",
	"watcherCleanThreadsNum", "maxInProcessingDeadWatchers", "disableRecursiveWatch",
	"largeRequestMaxBytes", "largeRequestThreshold", "connection_throttle_tokens",
	"connection_throttle_fill_time", "connection_throttle_fill_count",
	"connection_throttle_freeze_time", "connection_throttle_drop_increase",
	"connection_throttle_drop_decrease", "connection_throttle_decrease_ratio",
	"throttled_op_wait_time", "zookeeper.nio.numSelectorThreads", "nio.numSelectorThreads",
	"nio.numWorkerThreads", "nio.directBufferBytes", "nio.shutdownTimeout",
	"commitProcessor.numWorkerThreads", "commitProcessor.maxReadBatchSize",
	"commitProcessor.maxCommitBatchSize", "fastleader.minNotificationInterval",
	"fastleader.maxNotificationInterval", "closeSessionTxn.enabled",
	"emulate353TTLNodes", "container.checkIntervalMs", "container.maxPerMinute",
	"container.maxNeverUsedIntervalMs",
}

// zooKeeperTLSKeys are ZooKeeper's ssl.* and ssl.quorum.* keys (named
// without the prefix) that Giraffe does not use.
var zooKeeperTLSKeys = []string{
	"crl", "ocsp", "handshakeDetectionTimeoutMillis", "sslProvider",
	"context.supplier.class", "authProvider", "fipsMode",
}

// zooKeeperPrefixes begin families of ZooKeeper keys Giraffe does not use.
var zooKeeperPrefixes = []string{
	"authProvider.", "metricsProvider.", "quorum.auth.", "jvm.pause.", "multiAddress.",
	"group.", "weight.", "kerberos.", "znode.container.", "admin.",
}

// classifyUnused sorts the keys no setter knew into ZooKeeper's and
// unknown ones, suggesting for each unknown key the nearest known one.
func classifyUnused(keys []string) UnusedKeys {
	var u UnusedKeys
	for _, k := range keys {
		if isZooKeeperKey(k) {
			u.ZooKeeper = append(u.ZooKeeper, k)
			continue
		}
		u.Unknown = append(u.Unknown, UnknownKey{Key: k, Suggestion: nearestKey(k)})
	}
	return u
}

func isZooKeeperKey(k string) bool {
	k = strings.TrimPrefix(k, "zookeeper.")
	if slices.Contains(zooKeeperKeys, k) {
		return true
	}
	if rest, ok := strings.CutPrefix(k, "ssl."); ok {
		return slices.Contains(zooKeeperTLSKeys, strings.TrimPrefix(rest, "quorum."))
	}
	for _, p := range zooKeeperPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// nearestKey returns the known key (Giraffe's or ZooKeeper's) closest to
// k in edit distance, if it is within a third of k's length: a slip of
// the fingers, not another word.
func nearestKey(k string) string {
	best, bestD := "", len(k)/3+1
	for _, known := range [][]string{giraffeKeys, zooKeeperKeys} {
		for _, c := range known {
			if d := levenshtein.ComputeDistance(strings.ToLower(k), strings.ToLower(c)); d < bestD {
				best, bestD = c, d
			}
		}
	}
	return best
}

// giraffeKeys are the keys Config.set applies, for suggestions (the
// families with a variable part are given by an example).
var giraffeKeys = []string{
	"dataDir", "dataLogDir", "clientPort", "clientPortAddress", "metricsPort",
	"metricsProvider.httpPort", "admin.serverPort", "admin.enableServer", "tickTime",
	"minSessionTimeout", "maxSessionTimeout", "maxClientCnxns", "jute.maxbuffer",
	"maxDataBytes", "4lw.commands.whitelist", "superDigest",
	"zookeeper.DigestAuthenticationProvider.superDigest", "extendedTypesEnabled",
	"enforceQuota", "reconfigEnabled", "skipACL", "snapCount",
	"autopurge.snapRetainCount", "autopurge.purgeInterval", "forceSync",
	"znode.container.checkIntervalMs", "serverId", "secureClientPort",
	"secureClientPortAddress", "sslQuorum", "X509AuthenticationProvider.superUser",
	"serverCnxnFactory", "ssl.keyStore.location", "ssl.keyStore.type",
	"ssl.keyStore.password", "ssl.trustStore.location", "ssl.trustStore.type",
	"ssl.trustStore.password", "ssl.clientAuth", "ssl.quorum.keyStore.location",
	"ssl.quorum.trustStore.location", "giraffe.trees", "giraffe.children",
	"giraffe.classic", "giraffe.tickMs", "giraffe.electionTicks", "giraffe.adminPort",
	"giraffe.adminAddress", "giraffe.adminTokenFile", "giraffe.faultInjection",
	"giraffe.weakMode", "giraffe.digestInterval", "giraffe.gcHeadroomMB", "giraffe.strictConfig", "giraffe.namespace.NAME", "giraffe.admin.N",
}
