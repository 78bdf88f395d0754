package server

import (
	"bytes"
	"errors"

	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/sessions"
)

// SeedMember makes cfg's data directory, which must hold nothing but its
// myid, the storage of cfg's server as a member of a new ensemble whose
// state starts with tree (a backup's): every member of the ensemble is
// seeded with the same tree and the same server lines, and they start as
// a new ensemble does, at the tree's zxid (replica.Seed). The sessions in
// the tree are kept, owned by no member: they expire after their timeout
// unless their clients reconnect.
//
// A tree from an ensemble whose membership changed holds that membership
// in /zookeeper/config, which a member adopts over its server lines; it
// is replaced by the server lines' membership (at the tree's zxid, keeping
// the node's mtime, so that every member seeds the same tree). It reports
// whether it did.
func SeedMember(cfg *Config, tree *datatree.Tree) (rewroteConfig bool, err error) {
	if !cfg.Replicated() {
		return false, errors.New("not an ensemble member: the configuration has no server.N lines")
	}
	voters, err := cfg.Ensemble.Voters()
	if err != nil {
		return false, err
	}
	if data, stat, _ := tree.ConfigNode(); len(bytes.TrimSpace(data)) > 0 {
		tree.SetConfig(members.Static(cfg.Ensemble.Members).Encode(), tree.LastZxid(), stat.Mtime)
		rewroteConfig = true
	}
	var buf bytes.Buffer
	buf.Write(sessions.NewOwners().AppendTo(nil))
	if err := tree.WriteSnapshot(&buf); err != nil {
		return false, err
	}
	return rewroteConfig, replica.Seed(cfg.ReplicaDir(), cfg.ServerID, voters, gpaxos.Zxid(tree.LastZxid()), buf.Bytes())
}
