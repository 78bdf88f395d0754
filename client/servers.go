package client

import (
	"math/rand/v2"
	"net"
	"strings"
)

// parseServers normalizes the server list: surrounding space is trimmed,
// empty entries are dropped, a missing port becomes ZooKeeper's 2181, and
// the list is shuffled unless told otherwise.
func parseServers(in []string, shuffle bool) ([]string, error) {
	var out []string
	for _, s := range in {
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(part); err != nil {
				part = net.JoinHostPort(strings.Trim(part, "[]"), "2181")
			}
			out = append(out, part)
		}
	}
	if len(out) == 0 {
		return nil, ErrNoServers
	}
	if shuffle {
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	}
	return out, nil
}
