// Package gozk holds what Giraffe's load generator and tests need around
// github.com/go-zookeeper/zk, the independent ZooKeeper client they drive
// Giraffe with: a host provider that keeps the order it is given (the
// library's own shuffles it, so a test or a benchmark could not say which
// server a session starts on) and a logger that drops the library's lines.
package gozk

// InOrder is a zk.HostProvider that tries its servers in the order given,
// from the first, and goes round them.
type InOrder struct {
	Addrs       []string
	next, tried int
}

// Init ignores the library's shuffled list: the order is Addrs'.
func (p *InOrder) Init([]string) error { return nil }

// Len returns the number of servers.
func (p *InOrder) Len() int { return len(p.Addrs) }

// Connected notes a connection: the next failure starts a new round.
func (p *InOrder) Connected() { p.tried = 0 }

// Next returns the next server, and true once every server was tried
// since the last connection, for the client to pause before going round.
func (p *InOrder) Next() (string, bool) {
	a := p.Addrs[p.next%len(p.Addrs)]
	p.next++
	p.tried++
	return a, p.tried > len(p.Addrs)
}

// Quiet is a zk.Logger that drops every line.
type Quiet struct{}

// Printf drops the line.
func (Quiet) Printf(string, ...any) {}
