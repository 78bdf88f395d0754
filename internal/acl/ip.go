package acl

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ipAddr is a parsed IPv4 (n == 4) or IPv6 (n == 16) address as
// IPAuthenticationProvider.addr2Bytes produces it. A fixed array keeps Check
// free of allocations.
type ipAddr struct {
	b [16]byte
	n int
}

// parseIP is IPAuthenticationProvider.addr2Bytes: any ':' makes the text
// IPv6, otherwise any '.' makes it IPv4; anything else is not an address.
// ZooKeeper's parser, not Go's, defines what is accepted: for example IPv6
// with an embedded IPv4 tail or a zone is rejected, and a segment may carry a
// sign as Java's Integer.parseInt allows.
func parseIP(s string) (ipAddr, bool) {
	switch {
	case strings.Contains(s, ":"):
		return parseIPv6(s)
	case strings.Contains(s, "."):
		return parseIPv4(s)
	}
	return ipAddr{}, false
}

func parseIPv4(s string) (ipAddr, bool) {
	a := ipAddr{n: 4}
	if strings.Count(s, ".") != 3 {
		return ipAddr{}, false
	}
	for i := 0; i < 4; i++ {
		var field string
		field, s, _ = strings.Cut(s, ".")
		v, ok := javaParseInt(field, 10)
		if !ok || v < 0 || v > 255 {
			return ipAddr{}, false
		}
		a.b[i] = byte(v)
	}
	return a, true
}

// parseIPv6 follows IPAuthenticationProvider.parseV6addr: at most one "::",
// exactly eight segments without it and at most seven explicit ones with it,
// each segment one to four hex digits. It walks the text in place rather
// than splitting it so that Check does not allocate.
func parseIPv6(s string) (ipAddr, bool) {
	before, after, compressed := strings.Cut(s, "::")
	if !compressed {
		if v6Segments(before) != 8 {
			return ipAddr{}, false
		}
	} else if strings.Contains(after, "::") ||
		v6Segments(before)+v6Segments(after) >= 8 {
		return ipAddr{}, false
	}
	a := ipAddr{n: 16}
	if !putV6Segments(&a, 0, before) ||
		!putV6Segments(&a, 16-2*v6Segments(after), after) {
		return ipAddr{}, false
	}
	return a, true
}

// v6Segments is the number of ':'-separated segments in one side of an IPv6
// address; an empty side has none.
func v6Segments(half string) int {
	if half == "" {
		return 0
	}
	return strings.Count(half, ":") + 1
}

func putV6Segments(a *ipAddr, at int, half string) bool {
	for rest, more := half, half != ""; more; {
		var seg string
		seg, rest, more = strings.Cut(rest, ":")
		if seg == "" || len(seg) > 4 {
			return false
		}
		v, ok := javaParseInt(seg, 16)
		if !ok {
			return false
		}
		// Java keeps the low 16 bits, so a segment "-1" reads as ffff.
		a.b[at] = byte(v >> 8)
		a.b[at+1] = byte(v)
		at += 2
	}
	return true
}

// javaParseInt is Java's Integer.parseInt for ASCII input: an optional '+'
// or '-', then at least one digit of the base, within int32. strconv.ParseInt
// with an explicit base accepts exactly that (no prefixes, no '_', no
// spaces). Java also accepts non-ASCII Unicode digits, which no address or
// mask length written by a client contains; those are rejected here.
func javaParseInt(s string, base int) (int32, bool) {
	v, err := strconv.ParseInt(s, base, 32)
	if err != nil {
		return 0, false
	}
	return int32(v), true
}

// parseBits parses the "/bits" suffix of an ip ACL expression, which must lie
// within the address length.
func parseBits(s string, a ipAddr) (int, bool) {
	v, ok := javaParseInt(s, 10)
	if !ok || v < 0 || int(v) > a.n*8 {
		return 0, false
	}
	return int(v), true
}

// mask clears every bit of a after the first bits, as
// IPAuthenticationProvider.mask does (bits beyond the length are a no-op).
func (a *ipAddr) mask(bits int) {
	for i := bits / 8; i < a.n; i++ {
		if i == bits/8 {
			a.b[i] &^= byte(0xff >> (bits % 8))
		} else {
			a.b[i] = 0
		}
	}
}

// ipValid is IPAuthenticationProvider.isValid: "address" or "address/bits".
func ipValid(expr string) bool {
	addr, bits, hasBits := strings.Cut(expr, "/")
	a, ok := parseIP(addr)
	if !ok {
		return false
	}
	if hasBits {
		if _, ok := parseBits(bits, a); !ok {
			return false
		}
	}
	return true
}

// ipMatches is IPAuthenticationProvider.matches: the caller's address id and
// the ACL address agree on the first bits bits (all of them by default), and
// are of the same family.
func ipMatches(id, expr string) bool {
	addr, bitsText, hasBits := strings.Cut(expr, "/")
	acl, ok := parseIP(addr)
	if !ok {
		return false
	}
	bits := acl.n * 8
	if hasBits {
		if bits, ok = parseBits(bitsText, acl); !ok {
			return false
		}
	}
	remote, ok := parseIP(id)
	if !ok || remote.n != acl.n {
		return false
	}
	acl.mask(bits)
	remote.mask(bits)
	return acl.b == remote.b
}

// HostAddress returns the "ip" id of a client connecting from remoteAddr,
// the id ZooKeeper gives every connection when it is accepted
// (NIOServerCnxn). The address is written as Java's
// InetAddress.getHostAddress writes it, since clients see it in whoAmI:
// dotted IPv4 (an IPv4-mapped IPv6 address counts as IPv4), or eight
// lower-case hex groups without "::" compression for IPv6, followed by
// "%zone" if there is one. remoteAddr is a net.Addr string ("host:port",
// "[v6]:port") or a bare address; ok is false when it is neither (for
// example a net.Pipe address).
func HostAddress(remoteAddr string) (string, bool) {
	host := remoteAddr
	if h, _, err := net.SplitHostPort(remoteAddr); err == nil {
		host = h
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return "", false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String(), true
	}
	b := ip.As16()
	var sb strings.Builder
	sb.Grow(40)
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			sb.WriteByte(':')
		}
		sb.WriteString(strconv.FormatUint(uint64(b[i])<<8|uint64(b[i+1]), 16))
	}
	if z := ip.Zone(); z != "" {
		sb.WriteByte('%')
		sb.WriteString(z)
	}
	return sb.String(), true
}
