package gpaxos

// MsgType names a message of the protocol. docs/protocol.md maps each to the
// steps of the Giraffe paper (gl.3.1 … ga.3.3, Fig. 5).
type MsgType uint8

const (
	// MsgProp carries client payloads from any server to the GL (Fig. 5 step 1).
	MsgProp MsgType = iota + 1
	// MsgAppend: GL → GC, entries of the GL's epoch after Prev, and the
	// commit point (gl.3.1, and gl.3.2's COMMIT piggybacked). Empty when a
	// heartbeat.
	MsgAppend
	// MsgGroupAppend: GC → group members along the group's tree; every
	// member forwards it to its children (gc.3.1, gc.3.3 COMMIT-G).
	MsgGroupAppend
	// MsgGroupAck: member → its GC, "my log holds the GL's history of Epoch
	// up to Zxid, durably" (ga.3.1).
	MsgGroupAck
	// MsgGAck: GC → GL, "a majority of my group holds the history up to Zxid"
	// (gc.3.2, ACK-G).
	MsgGAck
	// MsgCatchupReq: member → GC or GC → GL, "I am behind: my commit, my
	// current epoch and my last zxid are these"; answered by an Append from
	// the requester's last entry, or a Sync.
	MsgCatchupReq
	// MsgSync: GL → GC or GC → member: "truncate your log after Prev (which
	// you know committed), install Snapshot if any, append Entries, and follow
	// Epoch's history" (NEWGLEADER / NEWGC of gc.2.1 and ga.2.2, and catch-up).
	MsgSync
	// MsgGroupElect: a coordinator candidate asks its group to promise
	// GroupEpoch (group-level recovery).
	MsgGroupElect
	// MsgGroupElectAck answers MsgGroupElect; Reject when an equal or newer
	// group epoch was promised.
	MsgGroupElectAck
	// MsgGCHello: a freshly elected GC introduces itself to the GL it knows.
	MsgGCHello
	// MsgNewGEpoch: a GL candidate asks a GC to gather its group's promises
	// for Epoch (gl.1.1 NEWGEPOCH).
	MsgNewGEpoch
	// MsgPromiseReq: GC → members, relaying a candidate's NEWGEPOCH and
	// the history it names (Current, last zxid).
	MsgPromiseReq
	// MsgPromise: member → GC, the promise to candidate Leader with Current
	// and last Zxid (gc.1.2's ACK-E at member level); Reject when it
	// promised newer, or the same epoch to another candidate.
	MsgPromise
	// MsgGEpochAck: GC → candidate, a majority of the group promised Epoch;
	// Current/Zxid/Holder name the best history among them (gc.1.2).
	MsgGEpochAck
	// MsgFetch: candidate → holder of the best history, "send your log after
	// Commit, or after Zxid if mine follows your Current" (gl.1.2).
	MsgFetch
	// MsgFetchResp answers MsgFetch with the history (and snapshot).
	MsgFetchResp
	// MsgGSync: GL → GC, the answer to MsgGCHello: like MsgSync, after which
	// the GC relays what it adopted to its group.
	MsgGSync
	// MsgRegister: any server → GL, "register my incarnation (Inc) as the
	// one that votes for me; my configuration registers Replaces". The GL
	// orders it as a ConfRegister change (Node.maybeRegister).
	MsgRegister
	// MsgGroupPreElect: a server that would campaign for coordinator asks
	// its group whether it would promise GroupEpoch, without anyone
	// promising anything (pre-vote).
	MsgGroupPreElect
	// MsgGroupPreElectAck answers MsgGroupPreElect; Reject when the member
	// still hears its coordinator, or would refuse the candidate, and then
	// GroupEpoch is the group epoch the member promised.
	MsgGroupPreElectAck
	// MsgEarlyReply is not a step of the protocol and no node ever sees
	// it: the leader's host tells a proposal's origin the result its
	// application computed for the proposal once the leader ordered it,
	// before a quorum holds it (internal/replica's early replies). It
	// travels on the protocol's transport, so it is numbered here.
	MsgEarlyReply
)

var msgNames = [...]string{"?", "Prop", "Append", "GroupAppend", "GroupAck", "GAck", "CatchupReq",
	"Sync", "GroupElect", "GroupElectAck", "GCHello", "NewGEpoch", "PromiseReq", "Promise",
	"GEpochAck", "Fetch", "FetchResp", "GSync", "Register", "GroupPreElect", "GroupPreElectAck",
	"EarlyReply"}

func (t MsgType) String() string {
	if int(t) < len(msgNames) {
		return msgNames[t]
	}
	return "?"
}

// Message is every message of the protocol; fields a type does not use are
// zero. Every global-protocol message carries (Epoch, Group, GroupEpoch) so
// that receivers can fence stale senders.
type Message struct {
	Type     MsgType
	From, To ID
	// Inc is the sender's incarnation (Config.Incarnation): votes count
	// only for the incarnation the counting server's configuration
	// registers (quorum.Config.Counts).
	Inc        uint64
	Epoch      Epoch  // global epoch the message belongs to
	Leader     ID     // the global leader of Epoch, when known
	Coord      ID     // the coordinator of Group at GroupEpoch, when known
	Group      int    // the group the message concerns
	GroupEpoch uint64 // the sender's view of Group's group epoch
	Prev       Zxid   // Append/GroupAppend: zxid before Entries; Sync/FetchResp: truncation base
	Entries    []Entry
	Commit     Zxid  // commit point known to the sender
	Zxid       Zxid  // acks: acknowledged zxid; promises, catch-up and NewGEpoch: last zxid (PromiseReq: the candidate's); group elections and GroupAppend: the sender's (the coordinator's) configuration's zxid
	Current    Epoch // promises, catch-up, NewGEpoch and group elections: the sender's Current epoch; PromiseReq: the candidate's
	Holder     ID    // GEpochAck: the server holding the best history
	Snapshot   *Snapshot
	Down       []ID // GroupAppend: members the GC routes around
	GCs        []ID // Append/GroupAppend: the GL's coordinator of every group, for GL candidates
	Reject     bool
	// Conf: GAck, the hash of the configuration the group's majority point
	// was counted under (ConfigHash); the leader counts it only under the
	// same configuration. GroupPreElect: the hash of the configuration the
	// sender runs under.
	Conf uint64
	// Promisers: GEpochAck, the members whose promises it reports, and
	// PromiserIncs their incarnations; the candidate counts their majority
	// under its own configuration.
	Promisers    []ID
	PromiserIncs []uint64
	// Replaces: MsgRegister, the incarnation the sender's configuration
	// registers for it (0: none), which the change must replace.
	Replaces uint64
	// Members: NewGEpoch, the members of Group in the candidate's
	// configuration; the coordinator asks them for promises too, so that
	// a coordinator with an older configuration still reaches the members
	// the candidate counts.
	Members []ID
	// Last: GroupPreElect, the sender's last zxid; with Current it names
	// the sender's history, which a member compares with its own.
	Last Zxid
}

// Size returns an estimate of the encoded size of m in bytes, used by the
// simulator's cost model.
func (m *Message) Size() int {
	n := 64 + 8*len(m.Down) + 8*len(m.GCs) + 16*len(m.Promisers) + 8*len(m.Members)
	for _, e := range m.Entries {
		n += 16 + len(e.Data)
	}
	if m.Snapshot != nil {
		n += 16 + len(m.Snapshot.Data)
	}
	return n
}
