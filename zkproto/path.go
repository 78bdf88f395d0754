package zkproto

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// PathError reports a znode path that ZooKeeper's PathUtils.validatePath
// rejects; a server answers the request with BADARGUMENTS.
type PathError struct {
	// Path is the path as checked: for a sequential create it ends in the
	// "1" that stands for the suffix, as in ZooKeeper's message.
	Path string
	// Reason is ZooKeeper's wording, with the UTF-16 index of the offending
	// character where it names one.
	Reason string
}

// Error implements error.
func (e *PathError) Error() string {
	return fmt.Sprintf("zkproto: invalid path %q: %s", e.Path, e.Reason)
}

// ValidatePath checks a znode path exactly as ZooKeeper 3.9's
// PathUtils.validatePath(path, isSequential) does. A path must be
// non-empty, start with '/', not end with '/' (unless it is the root), and
// contain no empty segment, no "." or ".." segment, and none of the
// characters ZooKeeper forbids: U+0000, U+0001–U+001F, U+007F–U+009F,
// U+D800–U+F8FF and U+FFF0–U+FFFF. Java sees a character beyond U+FFFF as
// a surrogate pair, so every such character is forbidden too, and bytes
// that are not UTF-8 decode (in Java) to U+FFFD, so they are forbidden as
// well.
//
// A sequential create is checked as if the path ended in "1", because the
// server appends the suffix: "/a/" and "/" are valid sequential paths, and
// so are "/a/." and "/a/..", whose last segment gains the suffix.
//
// The error is a *PathError. ValidatePath does not allocate when the path
// is valid.
func ValidatePath(path string, sequential bool) error {
	if path == "" && !sequential {
		return &PathError{Path: path, Reason: "Path length must be > 0"}
	}
	if path == "" || path[0] != '/' {
		return newPathError(path, sequential, "Path must start with / character")
	}
	if len(path) == 1 {
		return nil // the root, or "/1" for a sequential create
	}
	if !sequential && path[len(path)-1] == '/' {
		return newPathError(path, sequential, "Path must not end with / character")
	}
	// The loop follows ZooKeeper's scan over the UTF-16 chars of the path.
	// '.' and '/' are ASCII, so the bytes next to one can be compared as
	// Java compares chars: a multi-byte rune never contains an ASCII byte.
	// The virtual "1" of a sequential path can break none of the rules; it
	// only matters as the character after the last byte.
	lastc := byte('/')
	u16 := 1 // UTF-16 index of path[i], for the error message
	for i := 1; i < len(path); {
		c := path[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(path[i:])
			if forbiddenRune(r) {
				return newPathError(path, sequential, fmt.Sprintf("invalid character @%d", u16))
			}
			lastc = c
			i += size
			u16++ // r <= U+FFFF here: one UTF-16 char
			continue
		}
		segmentEnds := i+1 < len(path) && path[i+1] == '/' || i+1 == len(path) && !sequential
		switch {
		case c == 0:
			return newPathError(path, sequential, fmt.Sprintf("null character not allowed @%d", u16))
		case c == '/' && lastc == '/':
			return newPathError(path, sequential, fmt.Sprintf("empty node name specified @%d", u16))
		case c == '.' && lastc == '.':
			if path[i-2] == '/' && segmentEnds {
				return newPathError(path, sequential, fmt.Sprintf("relative paths not allowed @%d", u16))
			}
		case c == '.':
			if path[i-1] == '/' && segmentEnds {
				return newPathError(path, sequential, fmt.Sprintf("relative paths not allowed @%d", u16))
			}
		case c <= 0x1f || c == 0x7f:
			return newPathError(path, sequential, fmt.Sprintf("invalid character @%d", u16))
		}
		lastc = c
		i++
		u16++
	}
	return nil
}

// forbiddenRune reports whether a non-ASCII rune is one ZooKeeper rejects.
// utf8.RuneError (U+FFFD) stands for invalid UTF-8 and is in the last
// range, as Java's replacement character is.
func forbiddenRune(r rune) bool {
	return r <= 0x9f || r >= 0xd800 && r <= 0xf8ff || r >= 0xfff0
}

// newPathError builds the error for a path that failed, naming it as
// ZooKeeper does (with the sequential "1").
func newPathError(path string, sequential bool, reason string) *PathError {
	if sequential {
		path += "1"
	}
	return &PathError{Path: path, Reason: reason}
}

// ParentPath returns the parent of an absolute path: "/" for a child of
// the root and for the root itself.
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
