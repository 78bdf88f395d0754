package acl

import (
	"math/rand/v2"
	"net/netip"
	"strconv"
	"testing"
)

func TestParseIPv6Bytes(t *testing.T) {
	// IPAuthenticationProviderTest.testParsingOfIPv6Address.
	tests := []struct {
		in   string
		want [16]byte
	}{
		{"2001:0db8:85a3:0000:0000:8a2e:0370:7334", [16]byte{0x20, 0x01, 0x0d, 0xb8, 0x85, 0xa3, 0, 0, 0, 0, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34}},
		{"2001:db8::8a2e:370:7334", [16]byte{0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x34}},
		{"2001:db8::1", [16]byte{0x20, 0x01, 0x0d, 0xb8, 15: 1}},
		{"::1", [16]byte{15: 1}},
		{"1::", [16]byte{1: 1}},
		{"::", [16]byte{}},
		// Integer.parseInt takes a sign; Java keeps the low 16 bits.
		{"-1::", [16]byte{0xff, 0xff}},
		{"+a::", [16]byte{0, 0x0a}},
		{"-fff::", [16]byte{0xf0, 0x01}},
	}
	for _, tc := range tests {
		a, ok := parseIP(tc.in)
		if !ok || a.n != 16 || a.b != tc.want {
			t.Errorf("parseIP(%q) = %x/%d ok=%v, want %x", tc.in, a.b, a.n, ok, tc.want)
		}
	}
}

func TestParseIPRejects(t *testing.T) {
	bad := []string{
		// IPAuthenticationProviderTest.invalidIPv6Addresses.
		"1", "1:2", "1::2:", ":1::2:", "1:2:3:4:5:6:7:8:", "1:2:3:4:5:6:7:8:9",
		"1:2::3:4:5:6:7:8", "1::2::", "1:abcdf::", "efgh::", "1:: ", " 1::",
		// Other IPv6 forms ZooKeeper's parser does not take.
		"::ffff:1.2.3.4", "fe80::1%eth0", ":::", "1:::2", "0x1::", "1_0::",
		// IPv4.
		"1.2.3", "1.2.3.4.", ".1.2.3", "1.2.3.256", "1.2.3.-1", "1..2.3",
		"1.2.3.0x1", "1.2.3. 4", "a.b.c.d", "1.2.3.4/8", "", "localhost",
		"1.2.3.99999999999",
	}
	for _, s := range bad {
		if a, ok := parseIP(s); ok {
			t.Errorf("parseIP(%q) = %x/%d, want failure", s, a.b, a.n)
		}
	}
	good := map[string][4]byte{
		"127.0.0.1":       {127, 0, 0, 1},
		"010.000.000.001": {10, 0, 0, 1},
		"+1.2.3.4":        {1, 2, 3, 4},
		"-0.0.0.0":        {},
		"255.255.255.255": {255, 255, 255, 255},
	}
	for s, want := range good {
		a, ok := parseIP(s)
		if !ok || a.n != 4 || [4]byte(a.b[:4]) != want {
			t.Errorf("parseIP(%q) = %v/%d ok=%v, want %v", s, a.b[:4], a.n, ok, want)
		}
	}
}

func TestIPValid(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		// ACLTest.testIPAuthenticationIsValidCIDR.
		{"127.0.0.1", true},
		{"127.0.0.1/32", true},
		{"127.0.0.1/0", true},
		{"127.0.0.1/33", false},
		{"10.0.0.1/-1", false},
		// ACLTest.testIPAuthenticationIsValidIpv6CIDR.
		{"2001:0db8:85a3:0000:0000:8a2e:0370:7334", true},
		{"2001:db8:85a3::8a2e:370:7334", true},
		{"::1", true},
		{"1::", true},
		{"2001:db8::/4", true},
		{"0:0:0:0:0:0:0::/8", true},
		{"2001:db8:85a3:0:0:0:0::/32", true},
		{"1234:5678:9abc:def0:1234:5678:9abc:def0", true},
		{"2001:db8:85a3:0000:0000:8a2e:0370:7334:extra", false},
		{"2001:db8:85a3:0000:0000:8a2e:0370", false},
		{"2001:db8:85a3::8a2e::0370:7334", false},
		{"2001:db8:85a3:G::8a2e:0370:7334", false},
		{"", false},
		{"2001:db8:85a3:0:0:0:0:1:2", false},
		{"2001:db8:85a3::8a2e:0370:7334:", false},
		{":2001:db8:85a3::8a2e:0370:7334", false},
		{"::FFFF:192.168.1.1", false},
		{"2001:db8:1234::/64", true},
		// ACLTest.testAuthWithIPV6Server / testAuthWithIPV4Server.
		{"::1/256", false},
		{"127.0.0.1/64", false},
		{"::1/128", true},
		{"::1/129", false},
		// Mask syntax as Integer.parseInt reads it.
		{"1.2.3.4/", false},
		{"1.2.3.4/+8", true},
		{"1.2.3.4/-0", true},
		{"1.2.3.4/ 8", false},
		{"1.2.3.4/8/8", false},
		{"1.2.3.4/99999999999", false},
	}
	for _, tc := range tests {
		if got := ipValid(tc.expr); got != tc.want {
			t.Errorf("ipValid(%q) = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestIPMatches(t *testing.T) {
	tests := []struct {
		id, expr string
		want     bool
	}{
		// ACLTest.testIPAuthenticationIsValidIpv6Mask.
		{"2001:db8:1234::", "2001:db8:1234::/64", true},
		{"2001:0db8:85a3:0000:0000:8a2e:0370:7334", "2001:0db8:85a3:0000:0000:8a2e:0370::/2", true},
		{"22001:db8:85a3:0:0:0:0::0", "2001:db8:85a3:0:0:0:0::/32", false},
		{"2001:db8::/4", "2001:db8::/4", false},
		// ACLTest.testAuthWithIPV6Server, client ::1 as Java writes it.
		{"0:0:0:0:0:0:0:1", "127.0.0.1/16", false},
		{"0:0:0:0:0:0:0:1", "0.0.0.1/16", false},
		{"0:0:0:0:0:0:0:1", "::1/64", true},
		{"0:0:0:0:0:0:0:1", "::1", true},
		{"0:0:0:0:0:0:0:1", "0000:0001::/32", false},
		{"0:0:0:0:0:0:0:1", "::2", false},
		// ACLTest.testAuthWithIPV4Server, client 127.0.0.1.
		{"127.0.0.1", "::1", false},
		{"127.0.0.1", "7f::/16", false},
		{"127.0.0.1", "127.0.0.1/16", true},
		{"127.0.0.1", "127.0.0.1", true},
		{"127.0.0.1", "192.168.0.2/16", false},
		{"127.0.0.1", "127.0.0.2", false},
		// Masks inside a byte and at the extremes.
		{"10.1.2.3", "10.1.2.0/24", true},
		{"10.1.3.3", "10.1.2.0/24", false},
		{"10.1.2.200", "10.1.2.128/25", true},
		{"10.1.2.100", "10.1.2.128/25", false},
		{"10.1.2.3", "10.0.0.0/15", true},
		{"10.2.2.3", "10.0.0.0/15", false},
		{"8.8.8.8", "0.0.0.0/0", true},
		{"8.8.8.8", "1.2.3.4/0", true},
		{"0:0:0:0:0:0:0:1", "1.2.3.4/0", false}, // families still differ
		{"fe80:0:0:0:0:0:0:1", "fe80::/10", true},
		{"febf:0:0:0:0:0:0:1", "fe80::/10", true},
		{"fec0:0:0:0:0:0:0:1", "fe80::/10", false},
		// Invalid expressions and ids never match.
		{"127.0.0.1", "127.0.0.1/33", false},
		{"127.0.0.1", "127.0.0.1/", false},
		{"127.0.0.1", "localhost", false},
		{"fe80:0:0:0:0:0:0:1%eth0", "fe80::/10", false},
		{"", "0.0.0.0/0", false},
	}
	for _, tc := range tests {
		if got := ipMatches(tc.id, tc.expr); got != tc.want {
			t.Errorf("ipMatches(%q, %q) = %v, want %v", tc.id, tc.expr, got, tc.want)
		}
	}
}

// TestIPMatchesAgainstNetip checks prefix matching on random addresses
// against the standard library's netip.Prefix.
func TestIPMatchesAgainstNetip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randAddr := func(v6 bool) netip.Addr {
		if v6 {
			var b [16]byte
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			return netip.AddrFrom16(b)
		}
		var b [4]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return netip.AddrFrom4(b)
	}
	for i := 0; i < 20000; i++ {
		v6 := rng.IntN(2) == 0
		acl := randAddr(v6)
		bits := rng.IntN(acl.BitLen() + 1)
		client := randAddr(v6)
		if rng.IntN(2) == 0 {
			// Make a near miss or a hit likely: copy a random-length prefix.
			p, _ := acl.Prefix(rng.IntN(acl.BitLen() + 1))
			cb, pb := client.AsSlice(), p.Addr().AsSlice()
			for j := 0; j < p.Bits()/8; j++ {
				cb[j] = pb[j]
			}
			client, _ = netip.AddrFromSlice(cb)
		}
		clientID, _ := HostAddress(client.String())
		expr := acl.String() + "/" + strconv.Itoa(bits)
		want := netip.PrefixFrom(acl, bits).Masked().Contains(client)
		if got := ipMatches(clientID, expr); got != want {
			t.Fatalf("ipMatches(%q, %q) = %v, netip says %v", clientID, expr, got, want)
		}
		if !ipValid(expr) {
			t.Fatalf("ipValid(%q) = false", expr)
		}
	}
}

func TestHostAddress(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"127.0.0.1:2181", "127.0.0.1", true},
		{"[::1]:2181", "0:0:0:0:0:0:0:1", true},
		{"[::ffff:10.0.0.1]:5", "10.0.0.1", true},
		{"[2001:DB8::1]:5", "2001:db8:0:0:0:0:0:1", true},
		{"[fe80::1%eth0]:5", "fe80:0:0:0:0:0:0:1%eth0", true},
		{"192.168.0.6", "192.168.0.6", true},
		{"fc00::4", "fc00:0:0:0:0:0:0:4", true},
		{"pipe", "", false},
		{"", "", false},
		{"example.com:80", "", false},
	}
	for _, tc := range tests {
		got, ok := HostAddress(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HostAddress(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzIP checks that the ip parsers never panic on client input and that an
// expression the validator rejects never matches.
func FuzzIP(f *testing.F) {
	for _, s := range []string{"127.0.0.1/16", "::1/64", "2001:db8::/4", "1::2::", "1.2.3.4/-1", "-1::/+8", "/", ":", "."} {
		f.Add("127.0.0.1", s)
		f.Add("0:0:0:0:0:0:0:1", s)
	}
	f.Fuzz(func(t *testing.T, id, expr string) {
		m := ipMatches(id, expr)
		if m && !ipValid(expr) {
			t.Fatalf("ipMatches(%q, %q) but the expression is invalid", id, expr)
		}
		if ipMatches(expr, expr) && !ipValid(expr) {
			t.Fatalf("invalid %q matches itself", expr)
		}
	})
}
