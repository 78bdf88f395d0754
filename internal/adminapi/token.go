package adminapi

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// The admin listener authenticates every request with a bearer token that
// the servers and the tools asking them read from a token file. The file's
// rules are ssh's for private keys: it must be accessible to its owner
// only, since anyone who can read it can change the ensemble.

// ErrUnauthorized is the error of a request the admin listener refused
// (401): the token was missing or wrong.
var ErrUnauthorized = errors.New("admin token missing or wrong (401 Unauthorized)")

// ReadTokenFile reads the admin token in path: the file's content without
// surrounding white space. It refuses a file that its group or others can
// access, an empty token, and a token holding white space or control
// characters (it travels in an HTTP header).
func ReadTokenFile(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("admin token file %s is not a regular file", path)
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("admin token file %s is accessible by group or others (mode %04o): "+
			"anyone who reads it can change the ensemble; chmod 600 it", path, perm)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("admin token file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("admin token file %s is empty", path)
	}
	for _, r := range tok {
		if r <= ' ' || r == 0x7f {
			return "", fmt.Errorf("admin token file %s: the token must be one word of printable characters", path)
		}
	}
	return tok, nil
}

// WriteTokenFile writes a new random token (32 bytes from crypto/rand, in
// hex) to path, readable by its owner only, and returns it. An existing
// file is replaced.
func WriteTokenFile(path string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	tmp := path + ".tmp"
	os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(tok + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tok, nil
}

// CheckToken reports why request r does not carry token want as its
// bearer token (nil when it does): no Authorization header, another
// scheme, or a wrong token. The comparison takes the same time whatever
// the token presented, so timing tells nothing about want.
func CheckToken(r *http.Request, want string) error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return errors.New("no token")
	}
	scheme, got, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return errors.New("not a bearer token")
	}
	// Comparing digests keeps the time independent of the lengths too.
	g, w := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(want))
	if subtle.ConstantTimeCompare(g[:], w[:]) != 1 {
		return errors.New("wrong token")
	}
	return nil
}
