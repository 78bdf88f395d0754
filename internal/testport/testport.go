// Package testport picks loopback ports for tests that must name a port
// before anything listens on it: an ensemble's peer addresses, a server
// process's flags. It picks below the kernel's ephemeral range, from which
// every outgoing connection takes its source port; a port picked there
// (as listening on port 0 does) can be taken by any test's dial between
// the check and the bind.
package testport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the first port Range considers, above the well-known and
// registered ports that services on the machine may hold.
const lowest = 10000

// Range returns a base such that the ports base .. base+n-1 of 127.0.0.1
// were all free a moment ago, below the ephemeral range.
func Range(n int) (int, error) {
	low, _ := Ephemeral()
	top := low - n
	if top <= lowest {
		return 0, fmt.Errorf("testport: no room for %d ports below the ephemeral range", n)
	}
	for try := 0; try < 50; try++ {
		base := lowest + rand.IntN(top-lowest)
		if free(base, n) {
			return base, nil
		}
	}
	return 0, fmt.Errorf("testport: no %d consecutive free ports", n)
}

// One returns a port of 127.0.0.1 that was free a moment ago, below the
// ephemeral range.
func One() (int, error) { return Range(1) }

// free reports whether base .. base+n-1 can each be listened on now.
func free(base, n int) bool {
	for p := base; p < base+n; p++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return false
		}
		ln.Close()
	}
	return true
}

// Ephemeral returns the kernel's ephemeral port range, Linux's default
// (32768-60999) when it cannot be read.
func Ephemeral() (low, high int) {
	low, high = 32768, 60999
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return low, high
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return low, high
	}
	l, err1 := strconv.Atoi(f[0])
	h, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || l <= lowest || h < l {
		return low, high
	}
	return l, h
}
