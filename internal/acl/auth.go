package acl

import "github.com/giraffe-coord/giraffe/zkproto"

// Authenticate is addAuth: it returns the id a connection gains by sending an
// auth packet with scheme and auth from remoteAddr, as ZooKeeper's registered
// providers decide it.
//
//   - "digest": auth is "user:password" and the id is digest:DigestID(...).
//     As in DigestAuthenticationProvider, nothing is rejected: text without a
//     ':' yields "text:" + base64(sha1("text")), which no ACL written with
//     DigestID matches, so the connection simply gains nothing usable.
//   - "ip": the connection's own address (HostAddress), whatever auth holds;
//     every connection already holds it, so this adds nothing new.
//   - "x509": the id comes from the connection's TLS certificate (X509ID),
//     which only the server knows; here, as for a connection without one,
//     zkproto.ErrAuthFailed;
//   - any other scheme ("world", "auth", "super", "sasl", unknown) has no
//     provider: zkproto.ErrAuthFailed, after which ZooKeeper replies
//     AUTHFAILED and closes the connection.
//
// The caller adds the id to the connection unless it already holds it. When
// the configured super digest is non-empty and equals the digest id's ID, the
// caller first adds SuperID, as DigestAuthenticationProvider does.
func Authenticate(scheme string, auth []byte, remoteAddr string) (zkproto.Id, error) {
	switch scheme {
	case schemeDigest:
		return zkproto.Id{Scheme: schemeDigest, ID: generateDigest(decodeAuthText(auth))}, nil
	case schemeIP:
		addr, ok := HostAddress(remoteAddr)
		if !ok {
			return zkproto.Id{}, zkproto.ErrAuthFailed
		}
		return zkproto.Id{Scheme: schemeIP, ID: addr}, nil
	}
	return zkproto.Id{}, zkproto.ErrAuthFailed
}
