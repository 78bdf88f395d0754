package datatree

import "slices"

// ReapCandidates returns, sorted, the nodes ZooKeeper's ContainerManager
// would delete at time now (ms since the epoch): containers without
// children that have had at least one child, and TTL nodes without children
// not changed for longer than their TTL. The server proposes a
// KindDeleteContainer entry for each; Apply checks again when it applies it.
// (ZooKeeper's znode.container.maxNeverUsedIntervalMs, which also reaps
// containers that never had a child, is not supported: its default, 0, is
// what this implements.)
func (t *Tree) ReapCandidates(now int64) []string {
	var out []string
	for p := range t.containers {
		if n := t.nodes[p]; len(n.children) == 0 && n.cversion > 0 {
			out = append(out, p)
		}
	}
	for p := range t.ttls {
		if n := t.nodes[p]; len(n.children) == 0 && ttlExpired(n, now) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// ttlExpired reports whether TTL node n has outlived its TTL at time now.
func ttlExpired(n *node, now int64) bool {
	ttl := ttlOf(n.owner)
	return ttl != 0 && now-n.mtime > ttl
}
