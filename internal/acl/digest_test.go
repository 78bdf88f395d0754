package acl

import "testing"

// Vectors from ZooKeeper's AuthTest.testGenerateDigest, ZooKeeperTest and
// values computed independently (sha1sum | base64) for the edge cases.
func TestDigestID(t *testing.T) {
	tests := []struct {
		user, password, want string
	}{
		{"super", "test", "super:D/InIHSb7yEEbrWz8b9l71RjZJU="},
		{"super", "zookeeper", "super:yyuhPKumRtNj4r8GnSbbwuq1vhE="},
		{"super", "foo", "super:t6lQTvqID/Gl5Or0n4FYE6kKP8w="},
		{"super", "bar", "super:hTdNN4QH4isoRvCrQ1Jf7REREQ4="},
		{"user", "test", "user:tl+z3z0vO6PfPfEENfLF96E6pM0="},
		{"pat", "pass", "pat:WHGn0d6WM4lGFEKDvqymXAwzUzA="},
		{"username1", "password1", "username1:Q6oudEQy1q/ToZs3aG1/HKKKycs="},
		{"", "pw", ":krPDEYdCl854cFNT6IXnoMv+VVA="},
		{"café", "x", "café:9XKcQ2oU83jfbegDObeS9IvcXgI="},
		// The user part stops at the first ':' of the joined text.
		{"a:b", "c", "a:cLzgnoJ6mP5qz3w+mwvPE2vDgu0="},
	}
	for _, tc := range tests {
		if got := DigestID(tc.user, tc.password); got != tc.want {
			t.Errorf("DigestID(%q, %q) = %q, want %q", tc.user, tc.password, got, tc.want)
		}
	}
}

func TestGenerateDigestWithoutColon(t *testing.T) {
	// DigestAuthenticationProvider hashes the whole text and keeps it all as
	// the user part when there is no ':'.
	tests := map[string]string{
		"foo": "foo:C+7Hteo/D9vJXQ3UfzxbwnXaijM=",
		"":    ":2jmj7l5rSw0yVb/vlWAYkK/YBwk=",
	}
	for in, want := range tests {
		if got := generateDigest(in); got != want {
			t.Errorf("generateDigest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeAuthText(t *testing.T) {
	tests := []struct {
		in   []byte
		want string
	}{
		{[]byte("user:pw"), "user:pw"},
		{[]byte("caf\xc3\xa9"), "café"},
		{[]byte("u:\xe9x"), "u:\uFFFDx"},
		{[]byte("\xff\xfe"), "\uFFFD\uFFFD"},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := decodeAuthText(tc.in); got != tc.want {
			t.Errorf("decodeAuthText(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDigestValid(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"user:tl+z3z0vO6PfPfEENfLF96E6pM0=", true},
		{"user:hash", true},
		{":hash", true},      // Java split keeps a leading empty string
		{"user:hash:", true}, // and drops trailing ones
		{"user:hash::", true},
		{"user:", false},
		{"user::", false},
		{"user", false},
		{"", false},
		{":", false},
		{"::", false},
		{"a:b:c", false},
		{"a::b", false},
	}
	for _, tc := range tests {
		if got := digestValid(tc.id); got != tc.want {
			t.Errorf("digestValid(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
