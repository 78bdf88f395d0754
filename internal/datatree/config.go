package datatree

import "github.com/giraffe-coord/giraffe/zkproto"

// SetConfig replaces the data of "/zookeeper/config", the ensemble's
// membership as ZooKeeper publishes it since 3.5 (server.N lines and a
// version), when a configuration change commits at zxid. Clients cannot
// write the node (its ACL is read-only); the server writes it on every
// replica at the same place in the log, so it is part of the replicated
// state and of snapshots.
func (t *Tree) SetConfig(data []byte, zxid, now int64) Trigger {
	n := t.nodes[configPath]
	t.beginChange(n)
	n.data = data
	n.dataHash = hashData(data)
	n.mtime = now
	n.mzxid = zxid
	n.version++
	t.endChange(n)
	if zxid > t.lastZxid {
		t.lastZxid = zxid
	}
	return Trigger{Type: zkproto.EventNodeDataChanged, Path: configPath, Zxid: zxid, ACL: n.acl.list}
}

// Config returns the data of "/zookeeper/config".
func (t *Tree) Config() []byte { return t.nodes[configPath].data }
