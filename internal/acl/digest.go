package acl

import (
	"crypto/sha1" // the digest scheme is defined by SHA-1; ids must equal ZooKeeper's byte for byte
	"encoding/base64"
	"strings"
	"unicode/utf8"
)

// DigestID returns the digest-scheme id of user with password:
// "user:" + base64(sha1("user:password")), the value a digest ACL entry must
// hold and the id addAuth("digest", "user:password") gives a connection
// (DigestAuthenticationProvider.generateDigest). As in ZooKeeper, the user
// part of the result is everything before the first ':' of "user:password",
// so a user name containing ':' is cut there.
func DigestID(user, password string) string {
	return generateDigest(user + ":" + password)
}

// generateDigest is DigestAuthenticationProvider.generateDigest: the text up
// to the first ':' (all of it if there is none), a ':', and the base64 of the
// SHA-1 of the whole text's UTF-8 bytes.
func generateDigest(idPassword string) string {
	user, _, _ := strings.Cut(idPassword, ":")
	sum := sha1.Sum([]byte(idPassword))
	return user + ":" + base64.StdEncoding.EncodeToString(sum[:])
}

// decodeAuthText turns the bytes of an addAuth packet into text as ZooKeeper's
// new String(bytes) does with its UTF-8 default charset: valid UTF-8 is kept
// byte for byte; each invalid byte becomes U+FFFD. (The JDK replaces a
// truncated multi-byte sequence by a single U+FFFD where this replaces each of
// its bytes; no client produces such a password.)
func decodeAuthText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r) // utf8.RuneError for an invalid byte, with n == 1
		b = b[n:]
	}
	return sb.String()
}

// digestValid is DigestAuthenticationProvider.isValid: Java's
// id.split(":").length == 2. Java's split drops trailing empty strings, so
// "u:h:" and ":h" are valid while "u:", "u::" and "u:h:x" are not.
func digestValid(id string) bool {
	return strings.Count(strings.TrimRight(id, ":"), ":") == 1
}
