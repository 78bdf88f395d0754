package datatree

import "github.com/giraffe-coord/giraffe/zkproto"

// SetConfig replaces the data of "/zookeeper/config", the ensemble's
// membership as ZooKeeper publishes it since 3.5 (server.N lines and a
// version), when a configuration change commits at zxid. Clients cannot
// write the node (its ACL is read-only); the server writes it on every
// replica at the same place in the log, so it is part of the replicated
// state and of snapshots.
func (t *Tree) SetConfig(data []byte, zxid, now int64) Trigger {
	trig := t.changeData(ConfigPath, t.nodes[ConfigPath], data, zxid, now)
	t.settle(zxid, true)
	if zxid > t.lastZxid {
		t.lastZxid = zxid
	}
	return trig
}

// Config returns the data of "/zookeeper/config".
func (t *Tree) Config() []byte { return t.nodes[ConfigPath].data }

// ConfigNode returns "/zookeeper/config"'s data, Stat and ACL, for the
// server's reconfig (which needs WRITE there, as in ZooKeeper 3.5+, and
// answers the new configuration with its Stat).
func (t *Tree) ConfigNode() ([]byte, zkproto.Stat, []zkproto.ACL) {
	n := t.nodes[ConfigPath]
	return n.data, n.stat(), n.acl.list
}
