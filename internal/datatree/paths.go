package datatree

import (
	"strconv"
	"strings"
)

// Paths of the system subtree (Quotas.java).
const (
	rootPath  = "/"
	procPath  = "/zookeeper"
	quotaPath = "/zookeeper/quota"
)

// ConfigPath is where ZooKeeper 3.5+ publishes its ensemble
// (ZooDefs.CONFIG_NODE).
const ConfigPath = "/zookeeper/config"

// isSpecialPath is DataTree.isSpecialPath: nodes that can never be deleted.
func isSpecialPath(p string) bool {
	return p == rootPath || p == procPath || p == quotaPath || p == ConfigPath
}

// splitPath splits p at its last '/' into the parent path ("/" for a child
// of the root) and the child's name. ok is false when p has no '/'.
func splitPath(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	if i == 0 {
		return rootPath, p[1:], true
	}
	return p[:i], p[i+1:], true
}

// appendSequence appends ZooKeeper's sequential suffix for counter c:
// String.format("%010d", c), ten digits zero-padded, the sign counted in the
// width when the counter has wrapped negative.
func appendSequence(b []byte, c int32) []byte {
	var digits [12]byte
	d := strconv.AppendInt(digits[:0], int64(c), 10)
	neg := c < 0
	if neg {
		b = append(b, '-')
		d = d[1:]
	}
	width := 10
	if neg {
		width = 9
	}
	for i := len(d); i < width; i++ {
		b = append(b, '0')
	}
	return append(b, d...)
}

// trimJava trims like Java's String.trim: every byte up to ' ' at both ends.
func trimJava(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}
