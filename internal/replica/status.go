package replica

import "github.com/giraffe-coord/giraffe/internal/gpaxos"

// Role is what a server does in the protocol right now.
type Role string

// The roles, as `giraffe cluster status` prints them.
const (
	RoleLeader      Role = "leader"
	RoleCoordinator Role = "coordinator"
	RoleAcceptor    Role = "acceptor"
)

// Status is a snapshot of the replica's state for operators and for the
// server's four-letter words.
type Status struct {
	ID        gpaxos.ID
	Role      Role
	Group     int
	Leader    gpaxos.ID // the global leader this server follows (None when unknown)
	Epoch     gpaxos.Epoch
	HardState gpaxos.HardState
	Last      gpaxos.Zxid // last entry in the log
	Commit    gpaxos.Zxid
	Applied   gpaxos.Zxid // last entry handed to the application
	// Incarnation identifies this life of the server's durable state;
	// Recovering says that it does not vote until the ensemble registers
	// it (a server that found its durable state damaged, or came back with
	// another disk).
	Incarnation uint64
	Recovering  bool
	// Registered: the configuration registers this incarnation by name.
	Registered bool
	// RepairedAt, for a server that started in recovery because it lost
	// durable state, is the commit point when the ensemble registered its
	// new incarnation: everything committed before the server lost its
	// state is at or below it, so the server holds it all again once its
	// application has applied RepairedAt. 0 until it is registered, and
	// for a server that started with its state.
	RepairedAt gpaxos.Zxid
	// Down is the members the coordinator of the server's group routes
	// around (gpaxos.Status.Down).
	Down []gpaxos.ID
	// ProposalsResent counts this server's proposals it sent the leader
	// again because none of them committed for a resend interval (a lost
	// message, a slow or changing leader; streams.go).
	ProposalsResent uint64
}

// Status returns the replica's latest status.
func (r *Replica) Status() Status { return *r.status.Load() }

func (r *Replica) publishStatus() {
	st := r.host.Status()
	s := Status{ID: st.ID, Group: st.Group, Role: RoleAcceptor, Leader: st.HardState.Leader,
		Epoch: st.HardState.Current, HardState: st.HardState, Last: st.Last, Commit: st.HardState.Commit,
		Applied: st.Applied, Incarnation: r.st.id.Incarnation, Recovering: st.Recovering,
		Registered: st.Registered, RepairedAt: r.host.RepairedAt(), Down: st.Down, ProposalsResent: r.host.Resent()}
	switch {
	case st.Leader:
		s.Role = RoleLeader
	case st.Coordinator:
		s.Role = RoleCoordinator
	}
	prev := r.status.Swap(&s)
	if f := r.cfg.OnStatus; f != nil && prev != nil && (prev.Role != s.Role || prev.Leader != s.Leader ||
		prev.Epoch != s.Epoch || prev.HardState.Promised != s.HardState.Promised) {
		f(*prev, s)
	}
}
