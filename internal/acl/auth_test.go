package acl

import (
	"errors"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestAuthenticate(t *testing.T) {
	tests := []struct {
		scheme string
		auth   string
		remote string
		want   zkproto.Id
		err    error
	}{
		{"digest", "super:test", "127.0.0.1:1", zkproto.Id{Scheme: "digest", ID: "super:D/InIHSb7yEEbrWz8b9l71RjZJU="}, nil},
		{"digest", "pat:pass", "[::1]:1", zkproto.Id{Scheme: "digest", ID: DigestID("pat", "pass")}, nil},
		// No ':' is accepted, as DigestAuthenticationProvider does.
		{"digest", "foo", "127.0.0.1:1", zkproto.Id{Scheme: "digest", ID: "foo:C+7Hteo/D9vJXQ3UfzxbwnXaijM="}, nil},
		{"digest", "u:\xe9x", "127.0.0.1:1", zkproto.Id{Scheme: "digest", ID: "u:S4dNrmWVdGA2oJvbuKzKAbsdmho="}, nil},
		{"ip", "ignored", "10.1.2.3:4567", zkproto.Id{Scheme: "ip", ID: "10.1.2.3"}, nil},
		{"ip", "", "[::1]:4567", zkproto.Id{Scheme: "ip", ID: "0:0:0:0:0:0:0:1"}, nil},
		{"ip", "", "pipe", zkproto.Id{}, zkproto.ErrAuthFailed},
		{"world", "anyone", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed},
		{"auth", "", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed},
		{"super", "test", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed},
		{"sasl", "x", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed},
		{"INVALID", "BAR", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed}, // AuthTest.testBadAuthThenSendOtherCommands
		{"Digest", "u:p", "127.0.0.1:1", zkproto.Id{}, zkproto.ErrAuthFailed},
	}
	for _, tc := range tests {
		got, err := Authenticate(tc.scheme, []byte(tc.auth), tc.remote)
		if got != tc.want || !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
			t.Errorf("Authenticate(%q, %q, %q) = %v, %v; want %v, %v", tc.scheme, tc.auth, tc.remote, got, err, tc.want, tc.err)
		}
	}
}

// TestAuthThenCheck walks AuthTest.testSuper and testOrdinaryACL through the
// package: create with CREATOR_ALL_ACL as pat, then read as various callers.
func TestAuthThenCheck(t *testing.T) {
	const superDigest = "super:D/InIHSb7yEEbrWz8b9l71RjZJU="
	connect := func(auths ...string) []zkproto.Id {
		ids := []zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}}
		for _, a := range auths {
			id, err := Authenticate("digest", []byte(a), "127.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			if id.ID == superDigest {
				ids = append(ids, SuperID)
			}
			ids = append(ids, id)
		}
		return ids
	}
	nodeACL, err := Fixup(zkproto.CreatorAllACL, connect("pat:pass"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		auth []string
		want bool
	}{
		{nil, false},
		{[]string{"pat:pass2"}, false},
		{[]string{"super:test2"}, false},
		{[]string{"super:test"}, true},
		{[]string{"pat:pass"}, true},
		{[]string{"bob:x", "pat:pass"}, true},
	} {
		if got := Check(nodeACL, zkproto.PermRead, connect(tc.auth...)); got != tc.want {
			t.Errorf("read as %v: %v, want %v", tc.auth, got, tc.want)
		}
	}
}
