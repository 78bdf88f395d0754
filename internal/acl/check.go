package acl

import "github.com/giraffe-coord/giraffe/zkproto"

// SuperID is the id the server adds to a connection that authenticated as the
// configured super user (DigestAuthenticationProvider's superDigest). A
// connection holding any id of scheme "super" passes every Check.
var SuperID = zkproto.Id{Scheme: "super", ID: ""}

// Scheme names.
const (
	schemeWorld  = "world"
	schemeAuth   = "auth"
	schemeDigest = "digest"
	schemeIP     = "ip"
	schemeSuper  = "super"
	schemeX509   = "x509"
	idAnyone     = "anyone"
)

// Check reports whether a caller holding ids may perform an operation needing
// perm (one of the zkproto.Perm* bits) on a node whose ACL is list, exactly as
// ZooKeeperServer.checkACL decides it:
//
//   - an empty ACL restricts nothing (Fixup never lets create or setACL
//     store one, but checkACL allows it and so does Check);
//   - a caller holding a "super" id may do anything;
//   - otherwise some entry granting perm must be world:anyone, or match one of
//     the caller's ids through its scheme's provider: digest and x509 ids by
//     equality, ip ids by address prefix. Entries of other schemes never
//     match.
//
// Check does not allocate unless an ip entry is malformed (which Fixup never
// lets in), so it is cheap enough to run on every request.
func Check(list []zkproto.ACL, perm int32, ids []zkproto.Id) bool {
	if len(list) == 0 {
		return true
	}
	for _, id := range ids {
		if id.Scheme == schemeSuper {
			return true
		}
	}
	for _, a := range list {
		if a.Perms&perm == 0 {
			continue
		}
		if a.ID.Scheme == schemeWorld && a.ID.ID == idAnyone {
			return true
		}
		if !isProvider(a.ID.Scheme) {
			continue
		}
		for _, id := range ids {
			if id.Scheme == a.ID.Scheme && providerMatches(id.Scheme, id.ID, a.ID.ID) {
				return true
			}
		}
	}
	return false
}

// isProvider reports whether scheme has an authentication provider: those
// ZooKeeper's ProviderRegistry registers by default, and x509, which
// ZooKeeper registers once a secure client port is configured and Giraffe
// always has, so that every replica decides alike whatever its ports.
func isProvider(scheme string) bool {
	return scheme == schemeDigest || scheme == schemeIP || scheme == schemeX509
}

// providerMatches is AuthenticationProvider.matches for the registered
// schemes: does the caller's id satisfy the ACL expression?
func providerMatches(scheme, id, aclExpr string) bool {
	switch scheme {
	case schemeDigest, schemeX509:
		return id == aclExpr
	case schemeIP:
		return ipMatches(id, aclExpr)
	}
	return false
}

// providerValid is AuthenticationProvider.isValid for the registered schemes.
func providerValid(scheme, id string) bool {
	switch scheme {
	case schemeDigest:
		return digestValid(id)
	case schemeIP:
		return ipValid(id)
	case schemeX509:
		return validDN(id)
	}
	return false
}

// providerAuthenticated is AuthenticationProvider.isAuthenticated: whether an
// id of this scheme proves who the caller is, and so may stand in for an
// "auth" ACL entry. An ip id only says where the caller connects from; an
// x509 id was proven by the TLS handshake.
func providerAuthenticated(scheme string) bool {
	return scheme == schemeDigest || scheme == schemeX509
}
