package acl

import "github.com/giraffe-coord/giraffe/zkproto"

// permLetters are zkCli's permission letters, in its order.
var permLetters = []struct {
	bit    int32
	letter byte
}{{zkproto.PermCreate, 'c'}, {zkproto.PermDelete, 'd'}, {zkproto.PermRead, 'r'}, {zkproto.PermWrite, 'w'}, {zkproto.PermAdmin, 'a'}}

// PermString writes a permission mask as zkCli does: the letters of the
// bits set, in the order cdrwa.
func PermString(p int32) string {
	var b []byte
	for _, l := range permLetters {
		if p&l.bit != 0 {
			b = append(b, l.letter)
		}
	}
	return string(b)
}

// ParsePerm returns the permission bit of one of zkCli's letters (cdrwa),
// and false for any other byte.
func ParsePerm(c byte) (int32, bool) {
	for _, l := range permLetters {
		if l.letter == c {
			return l.bit, true
		}
	}
	return 0, false
}
