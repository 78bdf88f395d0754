package server

import (
	"time"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// JoinedEnsemble returns the ensemble configuration a server that joined
// as m.ID starts with: the members, shape and timers the ensemble
// answered, and the voting configuration with the server in it.
func JoinedEnsemble(m adminapi.Membership) Ensemble {
	e := Ensemble{Shape: m.Shape, Tick: time.Duration(m.TickMs) * time.Millisecond, ElectionTicks: m.ElectionTicks,
		ClusterName: m.Cluster}
	for _, x := range m.Members {
		e.Members = append(e.Members, x.Member)
	}
	v := quorum.Config{Groups: m.Groups}
	e.Joined = &v
	return e
}
