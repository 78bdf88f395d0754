// Package acl implements ZooKeeper 3.9's access-control model: the world,
// auth, digest and ip schemes, the permission check made before every
// operation (ZooKeeperServer.checkACL), the validation and expansion of an ACL
// list given to create or setACL (PrepRequestProcessor.fixupACL), and the
// addAuth providers (DigestAuthenticationProvider, IPAuthenticationProvider).
//
// The package is pure: no I/O, no clock, no global state. The server decides
// which ids a connection holds (its "ip" id at connect, ids added by addAuth,
// SuperID for the configured super user) and passes them in; the data tree
// passes the node's ACL. Replicas that apply the same entry with the same ids
// therefore reach the same decision.
//
// Only the providers ZooKeeper registers by default exist here: "ip" and
// "digest". As in ZooKeeper, "world" and "auth" are not providers but special
// forms of an ACL entry, "super" is an id a connection may hold but never an
// ACL scheme, and every other scheme is unknown (INVALIDACL in an ACL,
// AUTHFAILED in addAuth).
package acl
