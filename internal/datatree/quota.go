package datatree

import (
	"strings"

	"github.com/giraffe-coord/giraffe/internal/quota"
)

// This file keeps ZooKeeper's quota statistics (DataTree.updateQuotaStat,
// updateQuotaForPath): a path P is a quota root while
// /zookeeper/quota/P/zookeeper_limits exists, and every create, delete and
// setData under P changes the count of nodes and bytes of data in
// /zookeeper/quota/P/zookeeper_stats, inside the apply, so that every
// replica keeps the same figures and they are in the digest and the
// snapshots like any node. The stats node's data changes but not its Stat
// (version, mzxid) and no watch fires, as in ZooKeeper. Nothing is cached:
// the root is found by looking up the limits nodes of the path's
// ancestors, which costs nothing while /zookeeper/quota has no children,
// and leaves nothing for a multi's rollback or a snapshot to rebuild.

// QuotaRoot returns the quota root that governs path: the longest of path
// and its ancestors other than "/" that has a limits node; "" when there
// is none or path is in the system subtree (ZooKeeper keeps no quota
// there).
func (t *Tree) QuotaRoot(path string) string {
	if q := t.nodes[quotaPath]; q == nil || len(q.children) == 0 {
		return ""
	}
	if path == procPath || strings.HasPrefix(path, procPath+"/") {
		return ""
	}
	for p := path; len(p) > 1; {
		if t.nodes[quota.LimitPath(p)] != nil {
			return p
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return ""
}

// QuotaRecords returns the limits and stats records of quota root p (an
// empty record for a node that is missing).
func (t *Tree) QuotaRecords(p string) (limits, stats quota.Stats) {
	limits, stats = quota.Stats{}, quota.Stats{}
	if n := t.nodes[quota.LimitPath(p)]; n != nil {
		limits = quota.Parse(n.data)
	}
	if n := t.nodes[quota.StatPath(p)]; n != nil {
		stats = quota.Parse(n.data)
	}
	return limits, stats
}

// updateQuota adds countDiff nodes and bytesDiff bytes to the stats of the
// quota root governing path, if any (DataTree.updateQuotaStat; a root
// without its stats node is skipped, as ZooKeeper logs and skips it).
func (t *Tree) updateQuota(path string, countDiff, bytesDiff int64) {
	root := t.QuotaRoot(path)
	if root == "" {
		return
	}
	sn := t.nodes[quota.StatPath(root)]
	if sn == nil {
		return
	}
	s := quota.Parse(sn.data)
	s[quota.KeyCount] = s.Get(quota.KeyCount) + countDiff
	s[quota.KeyBytes] = s.Get(quota.KeyBytes) + bytesDiff
	t.setQuotaData(sn, []byte(s.String()))
}

// quotaNodeCreated reacts to the creation of a node name under parent
// (DataTree.createNode): a stats node created under
// /zookeeper/quota/P gets P's figures, counted in the tree
// (updateQuotaForPath), whatever the client wrote into it.
func (t *Tree) quotaNodeCreated(parent, name string) {
	if name != quota.StatNode || !strings.HasPrefix(parent, quotaPath+"/") {
		return
	}
	root := strings.TrimPrefix(parent, quotaPath)
	var count, bytes int64
	var walk func(n *node)
	walk = func(n *node) {
		count++
		bytes += int64(len(n.data))
		for _, c := range n.children {
			walk(c)
		}
	}
	if n := t.nodes[root]; n != nil {
		walk(n)
	}
	s := quota.Stats{quota.KeyCount: count, quota.KeyBytes: bytes}
	t.setQuotaData(t.nodes[parent+"/"+name], []byte(s.String()))
}

// setQuotaData replaces a stats node's data, keeping its Stat.
func (t *Tree) setQuotaData(n *node, data []byte) {
	t.beginChange(n)
	n.data = data
	n.dataHash = hashData(data)
	t.endChange(n)
}
