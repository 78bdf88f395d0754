// Package acl implements ZooKeeper 3.9's access-control model: the world,
// auth, digest, ip and x509 schemes, the permission check made before every
// operation (ZooKeeperServer.checkACL), the validation and expansion of an ACL
// list given to create or setACL (PrepRequestProcessor.fixupACL), and the
// addAuth providers (DigestAuthenticationProvider, IPAuthenticationProvider)
// and the id a TLS client certificate gives (X509AuthenticationProvider).
//
// The package is pure: no I/O, no clock, no global state. The server decides
// which ids a connection holds (its "ip" id at connect, ids added by addAuth,
// SuperID for the configured super user) and passes them in; the data tree
// passes the node's ACL. Replicas that apply the same entry with the same ids
// therefore reach the same decision.
//
// The providers are those ZooKeeper registers by default, "ip" and
// "digest", and "x509", which ZooKeeper registers when it has a secure
// client port and Giraffe always has (the server, not addAuth, gives a
// connection its x509 id, from the certificate its client presented). As
// in ZooKeeper, "world" and "auth" are not providers but special forms of
// an ACL entry, "super" is an id a connection may hold but never an ACL
// scheme, and every other scheme is unknown (INVALIDACL in an ACL,
// AUTHFAILED in addAuth).
package acl
