package sim

import (
	"slices"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// keepSnaps is how many snapshots a disk retains, as production does.
const keepSnaps = 3

// disk is what a server's stable storage holds: only state whose fsync
// completed. A crash loses everything else; a storage fault (injectDiskFault)
// loses more, and leaves a mark that recover finds.
type disk struct {
	hs gpaxos.HardState
	// snaps are the retained snapshots, oldest first: a restart reads the
	// newest and falls back to older ones when it is corrupt.
	snaps []gpaxos.Snapshot
	// ents are the log: every entry accepted after base, in zxid order.
	ents []gpaxos.Entry
	// base is where the log starts: a snapshot installed from a peer (the
	// log before it is dropped), or the oldest retained snapshot (purging
	// a snapshot purges the log only it needed).
	base gpaxos.Zxid

	// The identity file (internal/replica identity.go): the incarnation of
	// this disk's durable state, whether the server lost state and waits
	// to be registered anew before it votes, and how many times it was
	// started (the host's proposal streams grow with it).
	incarnation uint64
	recovering  bool
	boots       uint64

	// The marks of storage faults, as production storage finds them.
	formatted bool // the identity file exists: written at the first start
	noHS      bool // the hard state file is missing
	damaged   bool // the log's last records fail their checksum
	corrupt   int  // this many of the newest snapshots fail their checksum

	// lost: the server restarted after losing durable state and has not
	// yet caught up to recoverTo, the canonical position at the loss.
	lost      bool
	recoverTo int
}

// snap is the newest snapshot, nil when none.
func (d *disk) snap() *gpaxos.Snapshot {
	if len(d.snaps) == 0 {
		return nil
	}
	return &d.snaps[len(d.snaps)-1]
}

// restartLog is what a start reads from the disk besides the hard state:
// the newest snapshot (nil when none) and the log after it.
func (d *disk) restartLog() (*gpaxos.Snapshot, []gpaxos.Entry) {
	snap := d.snap()
	if snap == nil {
		return nil, d.ents
	}
	return snap, d.entsAfter(snap.Index)
}

// entsAfter is the log after z.
func (d *disk) entsAfter(z gpaxos.Zxid) []gpaxos.Entry {
	i := 0
	for i < len(d.ents) && d.ents[i].Zxid <= z {
		i++
	}
	return d.ents[i:]
}

// saveSnapshot makes snap the newest snapshot: one installed from a peer
// replaces the log, one the server took keeps the log after the oldest
// snapshot retained.
func (d *disk) saveSnapshot(snap gpaxos.Snapshot, installed bool) {
	d.snaps = append(d.snaps, snap)
	if len(d.snaps) > keepSnaps {
		d.snaps = slices.Delete(d.snaps, 0, len(d.snaps)-keepSnaps)
	}
	if installed {
		d.ents, d.base = nil, snap.Index
		return
	}
	if oldest := d.snaps[0].Index; oldest > d.base {
		d.ents = slices.Clone(d.entsAfter(oldest))
		d.base = oldest
	}
}

// truncateAfter drops the log's entries after z.
func (d *disk) truncateAfter(z gpaxos.Zxid) {
	i := len(d.ents)
	for i > 0 && d.ents[i-1].Zxid > z {
		i--
	}
	d.ents = d.ents[:i]
}

// allDiskFaults are the storage faults a restart may find (Params.DiskFaults):
// the data directory wiped (an operator swapped the disk), the hard state
// file lost with the log kept, the last records of the log damaged (a disk
// that acknowledged an fsync it did not make), the newest snapshot corrupt
// (the restart falls back to an older one). A record damaged before other
// records (a flipped bit at rest) needs no kind of its own: production
// storage sets the whole state aside for it as for a damaged tail, and
// the restart after "tail" starts from nothing as that one does.
var allDiskFaults = []string{"wipe", "hardstate", "tail", "snapshot"}

// maxDamagedRecords bounds the log records a "tail" fault damages.
const maxDamagedRecords = 8

// injectDiskFault damages sv's disk, stopped, with one of the enabled
// faults, as its restart will find it; it returns the fault, "" when it
// made none (the fault did not apply to this disk, or a loss of durable
// state was not allowed now: mayLose).
func (s *Sim) injectDiskFault(sv *server) string {
	d := sv.disk
	kind := s.p.DiskFaults[s.drng.Intn(len(s.p.DiskFaults))]
	switch kind {
	case "wipe":
		d = disk{}
	case "hardstate":
		d.hs, d.noHS = gpaxos.HardState{}, true
	case "tail":
		var after gpaxos.Zxid
		if sn := d.snap(); sn != nil {
			after = sn.Index
		}
		n := len(d.entsAfter(after))
		if n == 0 {
			return ""
		}
		d.ents = d.ents[:len(d.ents)-1-s.drng.Intn(min(n, maxDamagedRecords))]
		d.damaged = true
	case "snapshot":
		if len(d.snaps) == 0 {
			return ""
		}
		d.corrupt = 1
	}
	if d.lossReason() != "" && !s.mayLose(sv) {
		return ""
	}
	if kind == "wipe" && !s.registeredEverywhere(sv) {
		// A new disk looks like a new server. Until every server counts
		// only sv's registered incarnation, one that still counts any
		// would count the new disk's empty promises for sv: the window
		// docs/protocol.md §11 leaves uncovered, which no disk can close.
		return ""
	}
	sv.disk = d
	return kind
}

// lossReason is how production storage, opening d, finds that durable
// state was lost, "" when nothing was: a missing identity file, a missing
// hard state, a record that fails its checksum, or a snapshot to fall back
// to that is older than the log's base (the log after it has a gap). A
// corrupt snapshot with an older one to fall back to and the log since is
// no loss: the restart replays more of the log.
func (d *disk) lossReason() string {
	switch {
	case !d.formatted:
		return reasonEmpty
	case d.noHS:
		return "hard state missing"
	case d.damaged:
		return "log record fails its checksum"
	case d.corrupt > 0:
		var fallback gpaxos.Zxid
		if i := len(d.snaps) - 1 - d.corrupt; i >= 0 {
			fallback = d.snaps[i].Index
		}
		if fallback < d.base {
			return "snapshot older than the log's base"
		}
	}
	return ""
}

// reasonEmpty is lossReason's answer for a data directory without an
// identity (a replaced disk).
const reasonEmpty = "data directory empty"

// repair is what production storage does with what it found at open: it
// drops the corrupt snapshots and the damaged records (already gone from
// ents), and writes the identity and hard state files again.
func (d *disk) repair() {
	d.snaps = d.snaps[:len(d.snaps)-d.corrupt]
	d.corrupt, d.noHS, d.damaged, d.formatted = 0, false, false, true
}

// recovering reports whether sv lost durable state and does not vote yet:
// it votes again once the configuration registers its new incarnation
// and that registration has committed (docs/protocol.md §11), which also
// means it has caught up with what was committed when it lost its state.
func (s *Sim) recovering(sv *server) bool {
	if !sv.disk.lost {
		return false
	}
	if !sv.up || sv.host == nil {
		return true
	}
	st := sv.host.Status()
	return !st.Registered || st.Recovering || sv.pos < sv.disk.recoverTo || !s.restartsRegistered(sv)
}

// restartsRegistered reports whether sv, restarted from its disk now,
// would count its own votes, as a node restored from the disk says. The
// status of the running node speaks for its memory, which learns that a
// registration committed one write before its disk does.
func (s *Sim) restartsRegistered(sv *server) bool {
	snap, ents := sv.disk.restartLog()
	n, err := gpaxos.RestartNode(s.nodeConfig(sv), sv.disk.hs, snap, ents)
	if err != nil {
		s.fail(failCorrectness, "server %d: restoring a node from its disk: %v", sv.id, err)
		return false
	}
	st := n.Status()
	return st.Registered && !st.Recovering
}

// mayLose reports whether sv may lose durable state now: the servers
// recovering from a loss, sv with them, stay within what every
// configuration that may come to be in force survives (survivesLoss).
// That includes a change appended but not committed, which every server
// holding it already uses: committed, it may leave no quorum without them.
func (s *Sim) mayLose(sv *server) bool {
	lost := s.recoveringNow()
	lost[sv.id] = true
	for _, cfg := range s.configsInUse() {
		if !survivesLoss(cfg, lost) {
			return false
		}
	}
	return true
}

// recoveringNow returns the servers recovering from a loss of durable
// state.
func (s *Sim) recoveringNow() map[gpaxos.ID]bool {
	lost := map[gpaxos.ID]bool{}
	for _, o := range s.members() {
		if s.recovering(o) {
			lost[o.id] = true
		}
	}
	return lost
}

// survivesLoss reports whether an ensemble under cfg survives the loss of
// the durable state of the servers in lost: they are at most half of the
// smallest quorum (one at least) and leave a quorum of servers with whole
// storage, from which they recover. A loss beyond that can lose committed
// entries on every copy, which no protocol survives, or leave no quorum
// to register the servers that lost their state again, which they need
// before they vote (a recovering server counts as down).
func survivesLoss(cfg quorum.Config, lost map[gpaxos.ID]bool) bool {
	return len(lost) <= max(1, smallestQuorum(cfg)/2) && cfg.IsQuorum(func(id gpaxos.ID) bool { return !lost[id] })
}

// configsInUse returns the committed configuration and every one a member
// uses, or, while down, will restart with: the newest in its log, committed
// or not; and a change the leader has accepted but not yet appended, which
// may wait behind a full pipeline while losses that it does not survive
// happen.
func (s *Sim) configsInUse() []quorum.Config {
	out := []quorum.Config{s.committedVoters()}
	for _, sv := range s.members() {
		out = append(out, s.serverVoters(sv))
		if sv.host != nil {
			if c, ok := sv.host.QueuedVoters(); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

// serverVoters is the configuration sv's node uses, or, while it is down,
// the one it restarts with: its log's newest configuration entry, else its
// newest snapshot's, else the one it started with. (The log holds every
// entry after the oldest snapshot kept, so its newest configuration entry
// is never older than the newest snapshot's.)
func (s *Sim) serverVoters(sv *server) quorum.Config {
	if sv.host != nil {
		return sv.host.Voters()
	}
	for i := len(sv.disk.ents) - 1; i >= 0; i-- {
		if e := sv.disk.ents[i]; e.Type == gpaxos.EntryConfChange {
			if c, _, err := gpaxos.DecodeConfEntry(e.Data); err == nil {
				return c
			}
		}
	}
	if sn := sv.disk.snap(); sn != nil && len(sn.Voters.Groups) > 0 {
		return sn.Voters
	}
	if sv.initial != nil {
		return *sv.initial
	}
	return s.voters
}

// registeredEverywhere reports whether every member's configuration
// registers sv's incarnation.
func (s *Sim) registeredEverywhere(sv *server) bool {
	for _, o := range s.members() {
		if o.host == nil {
			if o.disk.incarnation != 0 {
				return false // down: its configuration is unknown here
			}
			continue
		}
		if inc, ok := o.host.Voters().Incarnations[sv.id]; !ok || inc != sv.disk.incarnation {
			return false
		}
	}
	return true
}

// smallestQuorum is the size of cfg's smallest quorum: majorities of
// groups that weigh more than half of all voters.
func smallestQuorum(cfg quorum.Config) int {
	best := cfg.Total()
	for set := 1; set < 1<<len(cfg.Groups); set++ {
		weight, size := 0, 0
		for g, members := range cfg.Groups {
			if set&(1<<g) != 0 {
				weight += len(members)
				size += quorum.Majority(len(members))
			}
		}
		if 2*weight > cfg.Total() && size < best {
			best = size
		}
	}
	return best
}

// restartAfterLoss restarts sv after its storage lost durable state
// (sv.disk.lost), as production storage does: an empty data directory is
// a new disk, which gets a new incarnation and looks like a new server
// (the registrations in the others' configurations keep its votes from
// counting); any other loss is set aside, and the server starts empty as a
// new incarnation in recovery, voting only once registered anew
// (docs/protocol.md §11).
func (s *Sim) restartAfterLoss(sv *server, reason string) {
	recovering := reason != reasonEmpty
	sv.disk = disk{formatted: true, recovering: recovering, lost: true, recoverTo: sv.disk.recoverTo}
	s.newIncarnation(sv)
	s.startUp(sv)
}

// newIncarnation gives sv's disk the next incarnation of sv: unique to the
// server and the life of its durable state, deterministic for a seed.
func (s *Sim) newIncarnation(sv *server) {
	sv.lives++
	sv.disk.incarnation = uint64(sv.id)<<32 | uint64(sv.lives)
}
