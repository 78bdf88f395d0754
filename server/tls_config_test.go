package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/tlsconf"
)

// TestTLSKeys reads ZooKeeper's TLS keys from zoo.cfg, in both the
// spellings ZooKeeper takes (zoo.cfg's, and the system properties'
// "zookeeper." prefix), and what Validate makes of them.
func TestTLSKeys(t *testing.T) {
	for _, tc := range []struct {
		name, lines string
		check       func(t *testing.T, c *Config)
		err         string
	}{
		{name: "none", check: func(t *testing.T, c *Config) {
			if c.SecureClientPort != 0 || c.SSLQuorum || c.ClientPort != 2181 || c.ClientTLS.Enabled() {
				t.Errorf("%+v", c)
			}
		}},
		{name: "secure and plain ports, both spellings", lines: `
clientPort=2181
secureClientPort=2281
secureClientPortAddress=127.0.0.2
serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory
ssl.keyStore.location=/etc/zk/server.pem
ssl.keyStore.type=PEM
zookeeper.ssl.trustStore.location=/etc/zk/ca.pem
ssl.trustStore.type=PEM
ssl.clientAuth=want
sslQuorum=true
ssl.quorum.keyStore.location=/etc/zk/quorum.pem
zookeeper.ssl.quorum.trustStore.location=/etc/zk/quorum-ca.pem
ssl.quorum.hostnameVerification=false
zookeeper.X509AuthenticationProvider.superUser=CN=admin,O=Ops`,
			check: func(t *testing.T, c *Config) {
				if c.ClientPort != 2181 || c.SecureClientPort != 2281 || c.SecureClientAddr != "127.0.0.2" || !c.SSLQuorum ||
					c.X509SuperUser != "CN=admin,O=Ops" {
					t.Errorf("ports and switches: %+v", c)
				}
				want := tlsconf.Settings{KeyStore: "/etc/zk/server.pem", TrustStore: "/etc/zk/ca.pem", ClientAuth: tlsconf.Want,
					HostnameVerification: true}
				if c.ClientTLS.KeyStore != want.KeyStore || c.ClientTLS.TrustStore != want.TrustStore ||
					c.ClientTLS.ClientAuth != want.ClientAuth || !c.ClientTLS.HostnameVerification || c.ClientTLS.ClientHostnameVerification {
					t.Errorf("ssl.*: %+v", c.ClientTLS)
				}
				q := c.QuorumTLS
				if q.KeyStore != "/etc/zk/quorum.pem" || q.TrustStore != "/etc/zk/quorum-ca.pem" || q.ClientAuth != tlsconf.Need ||
					q.HostnameVerification || !q.ClientHostnameVerification {
					t.Errorf("ssl.quorum.*: %+v", q)
				}
			}},
		{name: "only the secure port", lines: "secureClientPort=2281\nssl.keyStore.location=/k.pem", check: func(t *testing.T, c *Config) {
			if c.ClientPort != NoClientPort || c.SecureClientPort != 2281 {
				t.Errorf("clientPort %d, secureClientPort %d", c.ClientPort, c.SecureClientPort)
			}
		}},
		{name: "a JKS key store", lines: "ssl.keyStore.type=JKS", err: "Giraffe reads PEM"},
		{name: "bad clientAuth", lines: "ssl.clientAuth=sometimes", err: "ssl.clientAuth"},
		{name: "quorum without client certificates", lines: "sslQuorum=true\nssl.quorum.clientAuth=none", err: "ssl.quorum.clientAuth is none"},
		{name: "bad secure port", lines: "secureClientPort=99999", err: "secureClientPort 99999 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "zoo.cfg")
			os.WriteFile(path, []byte("dataDir="+dir+"\n"+tc.lines+"\n"), 0o644)
			cfg := DefaultConfig()
			ignored, err := LoadConfigFile(path, &cfg)
			if err == nil {
				err = cfg.Validate()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || ignored.Count() > 0 {
				t.Fatalf("err %v, ignored %v", err, ignored)
			}
			tc.check(t, &cfg)
		})
	}
}
