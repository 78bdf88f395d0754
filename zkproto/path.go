package zkproto

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ValidatePath checks a znode path as ZooKeeper's PathUtils.validatePath
// does: absolute, no trailing slash except the root, no empty, "." or ".."
// segment, and none of the characters ZooKeeper forbids (NUL, the C0 and C1
// controls, U+D800–U+F8FF, U+FFF0–U+FFFF, and — because Java sees them as
// surrogate pairs — every character beyond U+FFFF). For a sequential create
// the server appends a suffix, so the path is checked as if it ended in "1".
func ValidatePath(path string, sequential bool) error {
	if sequential {
		path += "1"
	}
	if path == "" {
		return fmt.Errorf("path length must be > 0")
	}
	if path[0] != '/' {
		return fmt.Errorf("path %q must start with / character", path)
	}
	if len(path) == 1 {
		return nil
	}
	if path[len(path)-1] == '/' {
		return fmt.Errorf("path %q must not end with / character", path)
	}
	segStart := 1
	for i := 1; i < len(path); {
		r, size := utf8.DecodeRuneInString(path[i:])
		switch {
		case r == 0:
			return fmt.Errorf("invalid path %q: null character not allowed @%d", path, i)
		case r == '/':
			if i == segStart {
				return fmt.Errorf("invalid path %q: empty node name specified @%d", path, i)
			}
			if seg := path[segStart:i]; seg == "." || seg == ".." {
				return fmt.Errorf("invalid path %q: relative paths not allowed @%d", path, i-1)
			}
			segStart = i + 1
		case r > 0 && r <= 0x1f, r >= 0x7f && r <= 0x9f, r >= 0xd800 && r <= 0xf8ff,
			r >= 0xfff0 && r <= 0xffff, r > 0xffff:
			return fmt.Errorf("invalid path %q: invalid character @%d", path, i)
		}
		i += size
	}
	if seg := path[segStart:]; seg == "." || seg == ".." {
		return fmt.Errorf("invalid path %q: relative paths not allowed @%d", path, len(path)-1)
	}
	return nil
}

// ParentPath returns the parent of an absolute path ("/" for a child of
// the root, and "/" for the root itself).
func ParentPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// BaseName returns the last segment of an absolute path ("" for the root).
func BaseName(p string) string {
	return p[strings.LastIndexByte(p, '/')+1:]
}
