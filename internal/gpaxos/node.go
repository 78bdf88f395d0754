package gpaxos

import (
	"errors"
	"slices"

	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// ErrNoLeader is returned by Propose when the node knows no global leader to
// forward to.
var ErrNoLeader = errors.New("gpaxos: no known global leader")

// Node is one server's Group Paxos state machine. It is not safe for
// concurrent use: the host drives it from one goroutine (or one simulated
// server) with Step, Tick, Propose, Ready and Advance.
type Node struct {
	cfg    Config
	id     ID
	voters quorum.Config
	group  int
	// confZxid is the zxid of the entry that set voters (0: the initial
	// configuration; a snapshot's index for a snapshot's); confHash names
	// voters in messages (ConfigHash).
	confZxid Zxid
	confHash uint64
	// inc is this server's incarnation (Config.Incarnation); reregistering
	// is the server whose incarnation the newest configuration entry
	// replaces, whose votes count for nobody until that entry commits
	// (incarnation.go).
	inc           uint64
	reregistering ID
	lastRegister  int64 // tick of the last MsgRegister

	hs      HardState
	log     memLog
	applied Zxid
	tick    int64

	// Persistence bookkeeping: what the next Ready must make durable.
	unstable    []Entry
	truncate    bool
	truncAfter  Zxid
	snapPending *Snapshot
	savedHS     HardState
	msgs        []Message
	// persisting is set while the host persists the last Ready (handed
	// out, not yet advanced): Ready then hands out only overlapped
	// Readies. persistBinding says that Ready makes a promise, an epoch,
	// a snapshot or a truncation durable; persistLateTo lists the servers
	// it holds Messages for; persistTicks counts the ticks it has taken.
	persisting     bool
	persistBinding bool
	persistLateTo  []ID
	persistTicks   int

	// Member state.
	heardGC int64 // tick at which the coordinator was last heard, or a candidacy of this server ended
	// heardCoord is the tick at which the coordinator this server follows
	// was last heard; unlike heardGC, its own candidacies do not move it.
	heardCoord int64
	// coordConf is the configuration a coordinator last named in a group
	// append to this server.
	coordConf   coordConfig
	treeDown    []ID   // the coordinator's down list, for forwarding
	gcTable     []ID   // the GL's coordinators, learned from appends
	catchup     pacer  // catch-up requests
	maxGE       uint64 // highest group epoch seen, even when rejected
	maxEpoch    Epoch  // highest global epoch seen, even when rejected
	pendingCand *Message

	// pins are the servers this one sent a snapshot they are still
	// receiving (pins.go).
	pins map[ID]snapPin

	gc     *coordinator
	gl     *leader
	gcCand *gcCandidate
	preGC  *gcPreCandidate
	glCand *glCandidate
}

// NewNode returns a node with an empty log.
func NewNode(cfg Config) (*Node, error) {
	return RestartNode(cfg, HardState{}, nil, nil)
}

// RestartNode returns a node restored from what its storage held: the hard
// state, the newest snapshot (nil when none) and the entries after it. The
// host must restore its application state from snap before applying the
// CommittedEntries of the first Ready.
func RestartNode(cfg Config, hs HardState, snap *Snapshot, ents []Entry) (*Node, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, id: cfg.ID, voters: cfg.Voters, hs: hs, savedHS: hs, inc: cfg.Incarnation}
	if snap != nil {
		n.log.install(*snap)
		if len(snap.Voters.Groups) > 0 {
			n.voters = snap.Voters
		}
		n.applied = snap.Index
	}
	for _, e := range ents {
		if e.Zxid > n.log.last() {
			n.log.ents = append(n.log.ents, e)
		}
	}
	n.refreshConfig()
	// The group is the one the newest configuration puts the server in;
	// a server that configuration leaves out keeps the group it had in
	// the initial one (as a learner).
	n.group = cfg.Voters.GroupOf(n.id)
	if g := n.voters.GroupOf(n.id); g >= 0 {
		n.group = g
	}
	if n.group < 0 {
		return nil, errors.New("gpaxos: ID votes neither in the initial nor in the restored configuration")
	}
	if n.hs.Commit > n.log.last() {
		n.hs.Commit = n.log.last()
	}
	n.maxGE, n.maxEpoch = hs.GroupEpoch, hs.Promised
	return n, nil
}

// ID returns the node's server id.
func (n *Node) ID() ID { return n.id }

// Tick advances the node's logical clock by one tick.
func (n *Node) Tick() {
	n.tick++
	if n.persisting {
		n.persistTicks++
	}
	n.adoptConfigRoles()
	n.maybeRequestRegistration()
	switch {
	case n.gl != nil:
		n.tickLeader()
	case n.glCand != nil:
		n.tickGLCandidate()
	}
	if n.gc != nil {
		n.tickCoordinator()
	} else {
		n.tickMember()
	}
}

// Propose asks for data to be ordered and committed. It returns ErrNoLeader
// when the node knows no global leader to send it to; success means only
// that the proposal left, not that it will commit.
func (n *Node) Propose(data []byte) error {
	if n.gl != nil {
		n.gl.pending = append(n.gl.pending, Entry{Type: EntryNormal, Data: data})
		return nil
	}
	if n.hs.Leader == None || n.hs.Leader == n.id {
		return ErrNoLeader
	}
	e := Entry{Type: EntryNormal, Data: data}
	// Proposals made before the next Ready travel to the leader in one
	// message (Fig. 5 step 1, batched): under load, one message per
	// proposal costs the leader more than the proposals themselves.
	for i := len(n.msgs) - 1; i >= 0; i-- {
		if m := &n.msgs[i]; m.Type == MsgProp && m.To == n.hs.Leader {
			m.Entries = append(m.Entries, e)
			return nil
		}
	}
	n.send(Message{Type: MsgProp, To: n.hs.Leader, Entries: []Entry{e}})
	return nil
}

// Step feeds one received message to the node. Messages from unknown or
// stale senders are ignored; Step never fails on bad input.
func (n *Node) Step(m Message) {
	if m.Epoch > n.maxEpoch {
		n.maxEpoch = m.Epoch
	}
	switch m.Type {
	case MsgProp:
		if n.gl != nil {
			n.gl.pending = append(n.gl.pending, m.Entries...)
		}
	case MsgAppend:
		n.handleAppend(m)
	case MsgGSync:
		n.handleGSync(m)
	case MsgGroupAppend:
		n.handleGroupAppend(m)
	case MsgSync:
		n.handleSync(m)
	case MsgGroupAck:
		n.handleGroupAck(m)
	case MsgGAck:
		n.handleGAck(m)
	case MsgCatchupReq:
		n.handleCatchupReq(m)
	case MsgGCHello:
		n.handleGCHello(m)
	case MsgGroupElect:
		n.handleGroupElect(m)
	case MsgGroupElectAck:
		n.handleGroupElectAck(m)
	case MsgNewGEpoch:
		n.handleNewGEpoch(m)
	case MsgPromiseReq:
		n.handlePromiseReq(m)
	case MsgPromise:
		n.handlePromise(m)
	case MsgGEpochAck:
		n.handleGEpochAck(m)
	case MsgFetch:
		n.handleFetch(m)
	case MsgFetchResp:
		n.handleFetchResp(m)
	case MsgRegister:
		n.handleRegister(m)
	case MsgGroupPreElect:
		n.handleGroupPreElect(m)
	case MsgGroupPreElectAck:
		n.handleGroupPreElectAck(m)
	}
	n.maybeStepDown()
}

// maybeStepDown drops roles that the hard state no longer supports: a leader
// whose acceptor promised a newer epoch, a coordinator whose group promised a
// newer group epoch.
func (n *Node) maybeStepDown() {
	n.adoptConfigRoles()
	if n.gl != nil && (n.hs.Promised != n.gl.epoch || n.hs.Current != n.gl.epoch) {
		n.gl = nil
	}
	if n.glCand != nil && n.hs.Promised > n.glCand.epoch {
		n.glCand = nil
	}
	if n.gc != nil && (n.hs.GroupEpoch != n.gc.ge || n.hs.Coordinator != n.id) {
		n.gc = nil
	}
	if n.gcCand != nil && n.hs.GroupEpoch > n.gcCand.ge {
		n.gcCand = nil
	}
}

// send queues m for the next Ready. Messages to the node itself go out like
// any other, so that they too leave only after the state they reflect is
// durable.
func (n *Node) send(m Message) {
	m.From, m.Inc = n.id, n.inc
	n.msgs = append(n.msgs, m)
}

// members returns the voters of the node's group in configuration order.
func (n *Node) members() []ID { return n.voters.Groups[n.group] }

// appendEntries appends ents, which must follow the log's last zxid.
func (n *Node) appendEntries(ents []Entry) {
	for _, e := range ents {
		if e.Zxid <= n.log.last() {
			continue
		}
		n.log.ents = append(n.log.ents, e)
		n.unstable = append(n.unstable, e)
		if e.Type == EntryConfChange {
			if c, _, err := DecodeConfEntry(e.Data); err == nil {
				n.setConfig(c, e.Zxid)
			}
		}
	}
}

// truncateLog drops entries after z, in memory and (through Ready) on disk.
func (n *Node) truncateLog(z Zxid) {
	if z >= n.log.last() {
		return
	}
	n.log.truncateAfter(z)
	i := 0
	for i < len(n.unstable) && n.unstable[i].Zxid <= z {
		i++
	}
	n.unstable = n.unstable[:i]
	if n.snapPending == nil && (!n.truncate || z < n.truncAfter) {
		n.truncate, n.truncAfter = true, z
	}
	if n.confZxid > z {
		n.refreshConfig()
	}
}

// installSnapshot replaces the log by snap.
func (n *Node) installSnapshot(snap Snapshot) {
	n.log.install(snap)
	n.unstable = nil
	n.truncate = false
	s := snap
	n.snapPending = &s
	if n.hs.Commit < snap.Index {
		n.hs.Commit = snap.Index
	}
	n.applied = snap.Index
	n.refreshConfig()
}

// advanceCommit raises the commit point to min(c, last): the log is a prefix
// of the history c was committed in, so everything up to there is committed.
func (n *Node) advanceCommit(c Zxid) {
	c = min(c, n.log.last())
	if c > n.hs.Commit {
		n.hs.Commit = c
	}
}

// Ready is everything the host must do after feeding the node: send the
// Early messages, apply the committed entries, persist, then send the
// Messages.
type Ready struct {
	// Overlapped marks a Ready handed out while the previous one is being
	// persisted (see Node.Ready): it carries only Early messages,
	// CommittedEntries and Ordered, needs no storage, and takes no
	// Advance.
	Overlapped bool
	// Ordered, in an overlapped Ready of a leader that orders during its
	// fsync (Config.OrderDuringPersist), are the entries it ordered
	// meanwhile: appended to its log and on their way to its groups (in
	// Early), not yet durable here; the Ready after Advance carries them
	// in Entries. A host that answers proposals once they
	// are ordered (replica's early replies) learns of them here.
	Ordered []Entry
	// HardState, when non-nil, is the node's new hard state. A host
	// writes it to stable storage when WritesHardState says so.
	HardState *HardState
	// CommitsConfig marks a HardState whose commit point commits the
	// newest configuration entry in the log. That commit point is
	// written even when no vote changed: whom the node counts depends on
	// it (a server re-registered after losing its state votes only once
	// its registration is known committed, docs/protocol.md §11), and a
	// restart that forgot it would leave the server unable to vote until
	// a leader told it again, which may be never if that leader was the
	// one to lose its state next.
	CommitsConfig bool
	// Snapshot, when non-nil, must be saved and every stored entry
	// discarded; the application must restore its state from it before
	// applying CommittedEntries.
	Snapshot *Snapshot
	// TruncateAfter, when non-nil, discards every stored entry with a
	// larger zxid (before Entries are appended).
	TruncateAfter *Zxid
	// Entries must be appended to stable storage.
	Entries []Entry
	// Early are messages that may be sent before Entries are durable, while
	// they are being written: appends and relays that carry entries down
	// the trees (and proposals on their way to the leader), which claim
	// nothing about this node's storage. Sending them first overlaps this
	// node's fsync with the receivers' (ZooKeeper's leader likewise logs a
	// proposal while sending it), so a write waits for one fsync instead
	// of one per level of the tree. See earlyMessages for when a message
	// qualifies.
	Early []Message
	// Messages must be sent only after HardState, Snapshot, TruncateAfter
	// and Entries are durable (fsynced): acknowledgments and promises in
	// them speak for that state. Messages may be addressed to the node
	// itself; deliver those through Step like any other.
	Messages []Message
	// CommittedEntries are committed and must be applied in order. They
	// may be applied before this Ready is durable: an entry commits once
	// a quorum holds it durably, and the node counts its own log only
	// through its own acknowledgment, which waits for its fsync; so a
	// committed entry may still be on its way to this node's disk.
	CommittedEntries []Entry
}

// MustWrite reports whether persisting rd writes anything to a disk that
// holds saved.
func (rd *Ready) MustWrite(saved HardState) bool {
	return rd.TruncateAfter != nil || len(rd.Entries) > 0 || rd.WritesHardState(saved)
}

// WritesHardState reports whether persisting rd writes the hard state
// (rd.HardState, or saved when it is nil) to a disk that holds saved: a
// snapshot's installation rewrites it with the snapshot as the log's
// base; otherwise a new commit point alone is a hint the node re-learns
// from its coordinator (HardState.SameVotes), not worth a write of its
// own, unless it commits a configuration (CommitsConfig).
func (rd *Ready) WritesHardState(saved HardState) bool {
	return rd.Snapshot != nil || rd.HardState != nil && (rd.CommitsConfig || !rd.HardState.SameVotes(saved))
}

// HasReady reports whether Ready would return anything.
func (n *Node) HasReady() bool {
	if n.persisting {
		return n.hasOverlapped()
	}
	return n.hs != n.savedHS || n.snapPending != nil || n.truncate || len(n.unstable) > 0 ||
		len(n.msgs) > 0 || n.hasCommitted() || (n.gl != nil && n.gl.wantsFlush(n))
}

func (n *Node) hasCommitted() bool {
	return min(n.hs.Commit, n.log.last()) > n.applied
}

// Ready returns what the host must do next. The host calls Advance once
// it has persisted the Ready and sent its Messages.
//
// A host that persists off its protocol loop may call Ready again before
// Advance, while the last Ready is being persisted: it then gets an
// overlapped Ready with only what needs no storage, committed entries to
// apply and messages that may leave at once, and keeps stepping messages
// in the meantime. A leader's acknowledgments from its members then
// commit while its own fsync runs, and members learn of commits during
// theirs (etcd's raft allows the same with asynchronous storage writes).
// A leader with Config.OrderDuringPersist orders new proposals at once
// (Ready.Ordered) and sends them to its groups. What must be durable
// (entries, votes, acknowledgments) waits for the Ready after Advance, so
// that one fsync still covers everything that arrived during the last.
func (n *Node) Ready() Ready {
	if n.persisting {
		return n.overlappedReady()
	}
	if n.gl != nil {
		n.flushLeader()
	}
	var rd Ready
	if n.hs != n.savedHS {
		hs := n.hs
		rd.HardState = &hs
		rd.CommitsConfig = n.savedHS.Commit < n.confZxid && n.confZxid <= hs.Commit
	}
	rd.Snapshot = n.snapPending
	if n.truncate {
		z := n.truncAfter
		rd.TruncateAfter = &z
	}
	rd.Entries = n.unstable
	rd.Early, rd.Messages = n.earlyMessages(rd, n.msgs)
	rd.CommittedEntries = n.takeCommitted()
	n.persisting, n.persistTicks = true, 0
	n.persistBinding = rd.Snapshot != nil || rd.TruncateAfter != nil || !n.hs.SameVotes(n.savedHS)
	n.persistLateTo = n.persistLateTo[:0]
	for _, m := range rd.Messages {
		if !slices.Contains(n.persistLateTo, m.To) {
			n.persistLateTo = append(n.persistLateTo, m.To)
		}
	}
	n.savedHS = n.hs
	n.snapPending, n.truncate, n.unstable, n.msgs = nil, false, nil, nil
	return rd
}

// takeCommitted returns the entries committed since the last Ready and
// marks them applied.
func (n *Node) takeCommitted() []Entry {
	c := min(n.hs.Commit, n.log.last())
	if c <= n.applied {
		return nil
	}
	from := max(n.applied, n.log.snap.Index)
	ents := slices.Clone(n.log.between(from, c))
	n.applied = c
	return ents
}

// overlapping reports whether messages may leave while the last Ready is
// being persisted: neither it nor what happened since changes anything
// that must reach the disk before anyone hears of it (a promise, an
// epoch, a snapshot, a truncation), and the disk has answered within a
// heartbeat. A server whose disk stops answering goes quiet, as if it had
// stopped, so that the others route around it: a leader that kept
// sending heartbeats and commit points, but ordered nothing new until its
// disk came back, would stall every write without anyone electing
// another.
func (n *Node) overlapping() bool {
	return !n.persistBinding && n.hs.SameVotes(n.savedHS) && n.snapPending == nil && !n.truncate &&
		n.persistTicks < n.cfg.HeartbeatTicks
}

// hasOverlapped reports whether overlappedReady would return anything.
func (n *Node) hasOverlapped() bool {
	if n.snapPending == nil && n.hasCommitted() {
		return true
	}
	if !n.overlapping() {
		return false
	}
	if n.gl != nil && (n.hs.Commit > n.gl.sentCommit || n.cfg.OrderDuringPersist && n.gl.wantsFlush(n)) {
		return true
	}
	blocked := n.persistLateTo
	for _, m := range n.msgs {
		if n.overlapSafe(m) && !slices.Contains(blocked, m.To) {
			return true
		}
		blocked = append(blocked[:len(blocked):len(blocked)], m.To)
	}
	return false
}

// overlappedReady is Ready while the last one is being persisted: the
// committed entries (unless a snapshot waits to be delivered first), a
// leader's newly ordered entries, and the messages that claim nothing
// about this node's storage, each only if no earlier message to the same
// server is held back, so that every server still receives the node's
// messages in order.
//
// With Config.OrderDuringPersist a leader orders what was proposed during
// its fsync and sends it on at once, so that an answer given once a
// proposal is ordered (a weak write's) does not wait for the fsync under
// way. Its own acknowledgment of these entries is a message to itself,
// which waits for the Ready after Advance, whose Entries they are.
func (n *Node) overlappedReady() Ready {
	rd := Ready{Overlapped: true}
	if n.overlapping() {
		if n.gl != nil && n.cfg.OrderDuringPersist {
			last := n.log.last()
			n.flushLeader()
			rd.Ordered = slices.Clone(n.log.between(last, n.log.last()))
		} else if n.gl != nil && n.hs.Commit > n.gl.sentCommit {
			// The commit point leaves now; new proposals wait for the
			// Ready after Advance.
			n.broadcastAppend(n.log.last(), nil)
		}
		blocked := slices.Clone(n.persistLateTo)
		var keep []Message
		for _, m := range n.msgs {
			if n.overlapSafe(m) && !slices.Contains(blocked, m.To) {
				rd.Early = append(rd.Early, m)
				continue
			}
			blocked = append(blocked, m.To)
			keep = append(keep, m)
		}
		n.msgs = keep
	}
	if n.snapPending == nil {
		rd.CommittedEntries = n.takeCommitted()
	}
	return rd
}

// overlapSafe reports whether m may leave while this node's last Ready is
// being persisted: it carries entries, proposals or a commit point, or a
// group's majority point, which counts this node only through its own
// acknowledgment (sent after its fsync). Never a message to itself, an
// acknowledgment of its own log, a promise or a refusal.
func (n *Node) overlapSafe(m Message) bool {
	if m.To == n.id {
		return false
	}
	switch m.Type {
	case MsgProp, MsgAppend, MsgGroupAppend:
		return true
	case MsgGAck:
		return !m.Reject
	}
	return false
}

// earlyMessages splits msgs, the messages of rd, into those the host may
// send before rd's entries are durable and the rest.
//
// Only a Ready that appends entries and changes nothing else that must be
// durable (no new promise, epoch or coordinator, no snapshot, no
// truncation) lets messages go early: a promise or a new epoch must reach
// the disk before anyone hears of it, or a server that crashed and
// restarted could promise again or lead the same epoch twice. Of its
// messages, only those that carry entries or proposals to other servers
// go early (MsgProp, MsgAppend, MsgGroupAppend): they claim nothing about
// this node's log, and every acknowledgment, the node's own included (a
// message to itself), still waits for the fsync. Their commit point must
// not count an entry of this Ready (it never does: the node counts
// itself only through its own acknowledgment, stepped after the fsync,
// and no other server has seen these entries yet; the check keeps that
// an invariant rather than an accident). A message goes early only if
// every message before it to the same server does, so each server
// receives them in the order the node produced them.
func (n *Node) earlyMessages(rd Ready, msgs []Message) (early, late []Message) {
	if len(rd.Entries) == 0 || rd.Snapshot != nil || rd.TruncateAfter != nil || len(msgs) == 0 {
		return nil, msgs
	}
	if rd.HardState != nil && !rd.HardState.SameVotes(n.savedHS) {
		return nil, msgs
	}
	first := rd.Entries[0].Zxid
	var blocked map[ID]bool
	for _, m := range msgs {
		ok := m.To != n.id && !blocked[m.To]
		switch m.Type {
		case MsgProp:
		case MsgAppend, MsgGroupAppend:
			ok = ok && m.Commit < first
		default:
			ok = false
		}
		if ok {
			early = append(early, m)
			continue
		}
		if blocked == nil {
			blocked = map[ID]bool{}
		}
		blocked[m.To] = true
		late = append(late, m)
	}
	return early, late
}

// Advance tells the node that the last Ready (not an overlapped one) has
// been persisted and its Messages sent.
func (n *Node) Advance() { n.persisting = false }

// Compact discards the log up to index, which the application has applied
// and captured in data. The host persists the snapshot itself (it made it);
// the node keeps it to catch up servers that lag behind it.
func (n *Node) Compact(index Zxid, data []byte) error {
	if index > n.applied || index <= n.log.snap.Index {
		return errors.New("gpaxos: compaction index out of range")
	}
	voters, _ := n.configAt(index)
	n.log.compact(Snapshot{Index: index, Voters: voters, Data: data}, n.keepFor(index))
	return nil
}

// Status is a read-only view of a node, for checkers and operators.
type Status struct {
	ID          ID
	Group       int
	HardState   HardState
	Last        Zxid
	SnapIndex   Zxid
	Applied     Zxid
	Leader      bool // leads epoch HardState.Promised
	Coordinator bool // coordinates its group at HardState.GroupEpoch
	// ConfHash names the configuration the node uses (ConfigHash);
	// ElectedUnder, for a coordinator, the one its group chose it under.
	ConfHash, ElectedUnder uint64
	// Recovering: the node does not vote until its configuration registers
	// its incarnation (see Config.Recovering). Registered: the
	// configuration registers its incarnation by name.
	Recovering, Registered bool
	// Down is the members the group's coordinator routes its tree around:
	// a coordinator's own list, another member's as last heard from its
	// coordinator.
	Down []ID
}

// Status returns the node's current status.
func (n *Node) Status() Status {
	st := Status{ID: n.id, Group: n.group, HardState: n.hs, Last: n.log.last(), SnapIndex: n.log.snap.Index,
		Applied: n.applied, Leader: n.gl != nil, Coordinator: n.gc != nil, ConfHash: n.confHash,
		Recovering: n.recovering()}
	if reg, ok := n.voters.Incarnations[n.id]; ok && reg == n.inc {
		st.Registered = true
	}
	st.Down = slices.Clone(n.treeDown)
	if n.gc != nil {
		st.ElectedUnder = n.gc.electedUnder
		st.Down = slices.Clone(n.gc.down)
	}
	return st
}

// Entries returns the log entries in (lo, hi], for checkers.
func (n *Node) Entries(lo, hi Zxid) []Entry { return n.log.between(lo, hi) }
