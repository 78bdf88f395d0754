package zkproto

import (
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"unicode/utf16"
)

// TestValidatePathZooKeeperCases are the cases of ZooKeeper's
// PathUtilsTest, one for one ("\ud800" is written as its UTF-8 encoding,
// which is not valid UTF-8 and so reaches Java as U+FFFD, also rejected).
func TestValidatePathZooKeeperCases(t *testing.T) {
	cases := []struct {
		name  string
		path  string
		valid bool
	}{
		{"ValidPath", "/this is / a valid/path", true},
		{"EmptyString", "", false},
		{"NotAbsolutePath", "not/valid", false},
		{"EndsWithSlash", "/ends/with/slash/", false},
		{"ContainsNullCharacter", "/test\u0000", false},
		{"DoubleSlash", "/double//slash", false},
		{"SinglePeriod", "/single/./period", false},
		{"DoublePeriod", "/double/../period", false},
		{"NameContainingPeriod", "/name/with.period.", true},
		{"0x01", "/test\u0001", false},
		{"0x1F", "/test\u001F", false},
		{"0x20", "/test\u0020", true},
		{"0x7e", "/test\u007e", true},
		{"0x7f", "/test\u007f", false},
		{"0x9f", "/test\u009f", false},
		{"ud800", "/test\xed\xa0\x80", false},
		{"uf8ff", "/test\uf8ff", false},
		{"HighestAllowableChar", "/test\uffef", true},
		{"SupplementaryChar", "/test\ufff0", false},
	}
	for _, c := range cases {
		if err := ValidatePath(c.path, false); (err == nil) != c.valid {
			t.Errorf("testValidatePath_%s: ValidatePath(%q) = %v, want valid=%v", c.name, c.path, err, c.valid)
		}
	}
}

func TestValidatePathMore(t *testing.T) {
	cases := []struct {
		path       string
		sequential bool
		reason     string // "" when valid
	}{
		{"/", false, ""},
		{"/a", false, ""},
		{"/zookeeper/quota", false, ""},
		{"/.a", false, ""},
		{"/a.", false, ""},
		{"/..a", false, ""},
		{"/a..", false, ""},
		{"/...", false, ""},
		{"/a/...", false, ""},
		{"/\u00e9t\u00e9", false, ""},
		{"/\u00a0", false, ""},
		{"/\ud7ff", false, ""},
		{"/\uf900", false, ""},
		{"a", false, "Path must start with / character"},
		{"//", false, "Path must not end with / character"},
		{"/a//b", false, "empty node name specified @3"},
		{"/.", false, "relative paths not allowed @1"},
		{"/..", false, "relative paths not allowed @2"},
		{"/a/.", false, "relative paths not allowed @3"},
		{"/a/../b", false, "relative paths not allowed @4"},
		{"/a\x00b", false, "null character not allowed @2"},
		{"/a\u0085", false, "invalid character @2"},
		{"/\U0001F600", false, "invalid character @1"},
		{"/a\xff", false, "invalid character @2"},
		{"/\ufffd", false, "invalid character @1"},
		// The index is in UTF-16 chars, as ZooKeeper reports it: é is one.
		{"/a/\u00e9\x01", false, "invalid character @4"},
		// Sequential creates are checked with the suffix standing in as "1".
		{"/", true, ""},
		{"/a/", true, ""},
		{"/a/.", true, ""},
		{"/a/..", true, ""},
		{"/a-", true, ""},
		{"", true, "Path must start with / character"},
		{"a", true, "Path must start with / character"},
		{"/a//", true, "empty node name specified @3"},
		{"/./", true, "relative paths not allowed @1"},
		{"/a\x01", true, "invalid character @2"},
	}
	for _, c := range cases {
		err := ValidatePath(c.path, c.sequential)
		if c.reason == "" {
			if err != nil {
				t.Errorf("ValidatePath(%q, %v) = %v, want nil", c.path, c.sequential, err)
			}
			continue
		}
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Errorf("ValidatePath(%q, %v) = %v, want a *PathError", c.path, c.sequential, err)
			continue
		}
		wantPath := c.path
		if c.sequential {
			wantPath += "1"
		}
		if pe.Reason != c.reason || pe.Path != wantPath {
			t.Errorf("ValidatePath(%q, %v) = %+v, want reason %q for %q", c.path, c.sequential, pe, c.reason, wantPath)
		}
	}
}

// javaValidatePath is ZooKeeper's algorithm restated over UTF-16 chars, the
// way Java sees a path decoded from UTF-8 (malformed bytes become U+FFFD).
// It is the oracle for the property test below and returns the reason, or
// "" for a valid path.
func javaValidatePath(path string, sequential bool) string {
	if sequential {
		path += "1"
	}
	chars := utf16.Encode([]rune(path))
	if len(chars) == 0 {
		return "Path length must be > 0"
	}
	if chars[0] != '/' {
		return "Path must start with / character"
	}
	if len(chars) == 1 {
		return ""
	}
	if chars[len(chars)-1] == '/' {
		return "Path must not end with / character"
	}
	lastc := uint16('/')
	for i := 1; i < len(chars); i++ {
		c := chars[i]
		atEnd := i+1 == len(chars)
		switch {
		case c == 0:
			return fmt.Sprintf("null character not allowed @%d", i)
		case c == '/' && lastc == '/':
			return fmt.Sprintf("empty node name specified @%d", i)
		case c == '.' && lastc == '.':
			if chars[i-2] == '/' && (atEnd || chars[i+1] == '/') {
				return fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c == '.':
			if chars[i-1] == '/' && (atEnd || chars[i+1] == '/') {
				return fmt.Sprintf("relative paths not allowed @%d", i)
			}
		case c > 0 && c <= 0x1f, c >= 0x7f && c <= 0x9f, c >= 0xd800 && c <= 0xf8ff, c >= 0xfff0:
			return fmt.Sprintf("invalid character @%d", i)
		}
		lastc = c
	}
	return ""
}

// reasonOf returns the PathError's reason, or "" for nil.
func reasonOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var pe *PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not a *PathError", err)
	}
	return pe.Reason
}

// TestValidatePathMatchesJava compares ValidatePath with the restated Java
// algorithm on random paths built from the characters that matter, reason
// and index included.
func TestValidatePathMatchesJava(t *testing.T) {
	alphabet := []string{"/", "/", "/", ".", ".", "a", "1", " ", "\x00", "\x1f", "\x7f", "~",
		"\u0085", "\u00a0", "\u00e9", "\ud7ff", "\ue000", "\uf900", "\uffef", "\ufff0", "\ufffd",
		"\U0001F600", "\xff", "\xed\xa0\x80", "\xe2\x82"}
	rng := rand.New(rand.NewSource(1))
	var sb strings.Builder
	for n := 0; n < 200000; n++ {
		sb.Reset()
		for k := rng.Intn(9); k > 0; k-- {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		p, seq := sb.String(), rng.Intn(4) == 0
		if got, want := reasonOf(t, ValidatePath(p, seq)), javaValidatePath(p, seq); got != want {
			t.Fatalf("ValidatePath(%q, %v): reason %q, ZooKeeper's %q", p, seq, got, want)
		}
	}
}

func TestValidatePathAllocs(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		_ = ValidatePath("/app/locks/lock-", true)
		_ = ValidatePath("/app/config/\u00e9l\u00e9ment.json", false)
	})
	if allocs != 0 {
		t.Fatalf("validating good paths allocates %v times", allocs)
	}
}

func TestParentAndBase(t *testing.T) {
	for _, c := range [][3]string{{"/", "/", ""}, {"/a", "/", "a"}, {"/a/b", "/a", "b"}, {"/a/b/c0000000001", "/a/b", "c0000000001"}} {
		if p, b := ParentPath(c[0]), BaseName(c[0]); p != c[1] || b != c[2] {
			t.Errorf("%q: parent %q base %q, want %q %q", c[0], p, b, c[1], c[2])
		}
	}
}
