package launcher

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/certs"
)

// A cluster started with Spec.TLS has a throw-away certificate authority
// in DIR/tls: ca.pem (the trust store of servers and clients), ca-key.pem,
// and client.pem, a client key store (key and certificate, subject
// CN=client,O=Giraffe cluster) for trying the secure ports with kazoo, the
// Java client or go-zookeeper. Every server has its own key store,
// DIR/s<id>/server.pem (subject CN=server <id>,O=Giraffe cluster, valid for
// 127.0.0.1 and localhost), used both on its secure client port, which
// requires a client certificate (ssl.clientAuth=need, ZooKeeper's
// default), and on its links to its peers (sslQuorum=true). Files holding
// a key are readable by their owner only.

// tlsOrg is the organization of the certificates the launcher makes.
const tlsOrg = "Giraffe cluster"

// TLSFiles are the files of a cluster's authority.
type TLSFiles struct {
	// CA is the trust store: the authority's certificate.
	CA string
	// CAKey is the authority's key.
	CAKey string
	// Client is a client key store: its private key and certificate.
	Client string
	// ClientSubject is the client certificate's subject as x509 ids and
	// ACLs write it.
	ClientSubject string
}

// TLSFilesIn returns where the cluster in dir keeps its authority.
func TLSFilesIn(dir string) TLSFiles {
	d := filepath.Join(dir, "tls")
	return TLSFiles{CA: filepath.Join(d, "ca.pem"), CAKey: filepath.Join(d, "ca-key.pem"),
		Client: filepath.Join(d, "client.pem"), ClientSubject: "CN=client,O=" + tlsOrg}
}

// serverKeyStore is server s's key store.
func serverKeyStore(s Server) string { return filepath.Join(s.Dir, "server.pem") }

// makeAuthority makes the cluster's authority and client key store, when
// the cluster has TLS.
func (c *Cluster) makeAuthority() error {
	if !c.Spec.TLS {
		return nil
	}
	f := TLSFilesIn(c.Spec.Dir)
	if err := os.MkdirAll(filepath.Dir(f.CA), 0o700); err != nil {
		return err
	}
	ca, err := certs.NewAuthority("Giraffe cluster CA", tlsOrg)
	if err != nil {
		return err
	}
	if err := ca.WriteFiles(f.CA, f.CAKey); err != nil {
		return err
	}
	return ca.IssueFile(f.Client, "client", tlsOrg)
}

// writeTLSConfig adds the TLS keys to server s's zoo.cfg, and issues its
// key store if it has none yet (a server joining later gets it here).
func (c *Cluster) writeTLSConfig(b *strings.Builder, s Server) error {
	if !c.Spec.TLS {
		return nil
	}
	f := TLSFilesIn(c.Spec.Dir)
	ks := serverKeyStore(s)
	if _, err := os.Stat(ks); os.IsNotExist(err) {
		ca, err := certs.LoadAuthority(f.CA, f.CAKey)
		if err != nil {
			return fmt.Errorf("the cluster's authority: %w", err)
		}
		if err := ca.IssueFile(ks, fmt.Sprintf("server %d", s.ID), tlsOrg, "127.0.0.1", "localhost"); err != nil {
			return err
		}
	}
	host, port, _ := net.SplitHostPort(s.SecureClientAddr)
	fmt.Fprintf(b, "secureClientPortAddress=%s\nsecureClientPort=%s\n", host, port)
	fmt.Fprintf(b, "ssl.keyStore.location=%s\nssl.keyStore.type=PEM\n", ks)
	fmt.Fprintf(b, "ssl.trustStore.location=%s\nssl.trustStore.type=PEM\nssl.clientAuth=need\n", f.CA)
	fmt.Fprintf(b, "sslQuorum=true\nssl.quorum.keyStore.location=%s\nssl.quorum.keyStore.type=PEM\n", ks)
	fmt.Fprintf(b, "ssl.quorum.trustStore.location=%s\nssl.quorum.trustStore.type=PEM\n", f.CA)
	return nil
}

// SecureConnectString returns host:port of every server's secure client
// port, comma-separated, or "" when the cluster has no TLS.
func (c *Cluster) SecureConnectString() string {
	var addrs []string
	for _, s := range c.Servers {
		if s.SecureClientAddr != "" {
			addrs = append(addrs, s.SecureClientAddr)
		}
	}
	return strings.Join(addrs, ",")
}
