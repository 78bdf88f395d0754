package server

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/giraffe-coord/giraffe/internal/gpaxos"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/quorum"
	"github.com/giraffe-coord/giraffe/internal/replica"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// This file finds, at run time, an ensemble member whose copy of a
// namespace differs from the others' (docs/namespaces.md, "Reliability
// isolation"). Replicas apply the same entries in the same order, so at
// the same zxid every healthy one holds the same namespaces; a digest
// that disagrees means damage the checksums did not catch (memory, a
// disk that returned other data than it was given) or a bug.
//
// Every member, having applied an entry whose zxid counter is a multiple
// of the digest interval (a checkpoint), proposes its namespaces'
// digests at that zxid through the log (bodyDigest). Every replica
// applies the reports in the same order, so all decide alike: once a
// majority of the voters reported one digest for a namespace at a
// checkpoint, each member that reported another is the odd one out. The
// odd member quarantines the namespace (it closes the connections that
// use it, and its clients fail over to members that hold it whole) and
// marks its replica for a resync (replica.MarkForResync), which its next
// start performs: its state set aside, the ensemble's state received
// anew. It then stops with ErrResync, so that `giraffe server` starts it
// again at once, but only when the members that reported the majority's
// digest form a quorum without it: a member that restarts votes only once
// the ensemble registers it anew, and its going must not leave the
// ensemble without a quorum to do that. Otherwise it stays up, the
// namespace quarantined, and decides again at the next checkpoint. Every
// member logs the divergence and counts it.

// bodyDigest is a proposal body: the origin's digest of each namespace at
// a checkpoint zxid.
const bodyDigest byte = 6

// keptCheckpoints bounds the checkpoints whose reports a replica keeps.
const keptCheckpoints = 4

// digestReport is one member's digests at a checkpoint, by namespace name
// ("" for the default namespace).
type digestReport map[string]uint64

// encodeDigestReport returns the body of a report at zxid: the zxid, then
// for each namespace its name's length, its name and its digest.
func encodeDigestReport(zxid int64, r digestReport) []byte {
	b := binary.BigEndian.AppendUint64([]byte{bodyDigest}, uint64(zxid))
	for _, name := range slices.Sorted(maps.Keys(r)) {
		b = append(b, byte(len(name)))
		b = append(b, name...)
		b = binary.BigEndian.AppendUint64(b, r[name])
	}
	return b
}

// decodeDigestReport reads a report body (without its type byte).
func decodeDigestReport(b []byte) (int64, digestReport, error) {
	if len(b) < 8 {
		return 0, nil, fmt.Errorf("digest report of %d bytes", len(b))
	}
	zxid := int64(binary.BigEndian.Uint64(b))
	r := digestReport{}
	for b = b[8:]; len(b) > 0; {
		n := int(b[0])
		if len(b) < 1+n+8 {
			return 0, nil, fmt.Errorf("digest report cut short")
		}
		r[string(b[1:1+n])] = binary.BigEndian.Uint64(b[1+n:])
		b = b[1+n+8:]
	}
	return zxid, r, nil
}

// divergence keeps the reports of the latest checkpoints; it is used by
// the applier only.
type divergence struct {
	interval uint32
	reports  map[int64]map[gpaxos.ID]digestReport
	decided  map[int64]map[string]bool // a namespace's verdict at a checkpoint
	// own marks the checkpoints this incarnation of the server reported
	// itself: a report of an earlier life, replayed from the log, says
	// nothing of the state this one holds.
	own map[int64]bool
}

func newDivergence(interval int) *divergence {
	return &divergence{interval: uint32(interval), reports: map[int64]map[gpaxos.ID]digestReport{},
		decided: map[int64]map[string]bool{}, own: map[int64]bool{}}
}

// checkpoint reports whether zxid is a checkpoint.
func (d *divergence) checkpoint(zxid int64) bool {
	c := uint32(zxid)
	return d != nil && d.interval > 0 && c != 0 && c%d.interval == 0
}

// afterApply proposes this member's digests when zxid, just applied, is a
// checkpoint. The tree lock is held.
func (r *replicated) afterApply(zxid int64) {
	if !r.div.checkpoint(zxid) {
		return
	}
	tab := r.s.cfg.Namespaces
	subs := namespaceSubtrees(tab, r.s.tree)
	rep := digestReport{}
	for i, ns := range append(tab.Namespaces(), nsmap.Default) {
		rep[ns.Name] = subs[i].Digest
	}
	r.rep.Propose(encodeDigestReport(zxid, rep), nil)
}

// applyDigestReport records origin's report and decides what it can. The
// tree lock is held.
func (r *replicated) applyDigestReport(origin gpaxos.ID, own bool, body []byte) {
	d := r.div
	if d == nil {
		return
	}
	zxid, rep, err := decodeDigestReport(body)
	if err != nil {
		r.s.log.Error("undecodable digest report", "origin", origin, "err", err)
		return
	}
	byMember := d.reports[zxid]
	if byMember == nil {
		if len(d.reports) >= keptCheckpoints {
			oldest := slices.Min(slices.Collect(maps.Keys(d.reports)))
			if zxid < oldest {
				return // too late to matter
			}
			delete(d.reports, oldest)
			delete(d.decided, oldest)
			delete(d.own, oldest)
		}
		byMember = map[gpaxos.ID]digestReport{}
		d.reports[zxid] = byMember
		d.decided[zxid] = map[string]bool{}
	}
	if _, dup := byMember[origin]; dup {
		return
	}
	byMember[origin] = rep
	if own {
		d.own[zxid] = true
	}
	_, voters, _ := r.s.membership.get()
	majority := voters.Total()/2 + 1
	for name := range rep {
		if d.decided[zxid][name] {
			// Decided: a later report is judged against the verdict.
			r.judge(zxid, name, origin, rep[name], byMember)
			continue
		}
		counts := map[uint64]int{}
		for _, m := range byMember {
			if v, ok := m[name]; ok {
				counts[v]++
			}
		}
		for v, n := range counts {
			if n < majority {
				continue
			}
			d.decided[zxid][name] = true
			for id, m := range byMember {
				if got, ok := m[name]; ok && got != v {
					r.diverged(zxid, name, id, got, v, byMember)
				}
			}
		}
	}
}

// judge checks a report that arrived after the verdict on a namespace.
func (r *replicated) judge(zxid int64, name string, origin gpaxos.ID, got uint64, byMember map[gpaxos.ID]digestReport) {
	counts := map[uint64]int{}
	for id, m := range byMember {
		if id != origin {
			counts[m[name]]++
		}
	}
	best, most := uint64(0), 0
	for v, n := range counts {
		if n > most {
			best, most = v, n
		}
	}
	if got != best {
		r.diverged(zxid, name, origin, got, best, byMember)
	}
}

// diverged acts on member id's copy of namespace name differing from the
// majority's at zxid; byMember holds the checkpoint's reports.
func (r *replicated) diverged(zxid int64, name string, id gpaxos.ID, got, want uint64, byMember map[gpaxos.ID]digestReport) {
	s := r.s
	root := nsmap.Namespace{Name: name}.Root()
	s.metrics.divergences.WithLabelValues(root).Inc()
	if id != s.cfg.ServerID || !r.div.own[zxid] {
		s.log.Warn("a member's copy of a namespace differs from the majority's", "member", id, "namespace", root,
			"zxid", fmt.Sprintf("0x%x", zxid), "digest", fmt.Sprintf("%016x", got), "majority", fmt.Sprintf("%016x", want))
		return
	}
	why := fmt.Sprintf("digest %016x of %s at 0x%x differs from the majority's %016x", got, root, zxid, want)
	s.log.Error("this member's copy of a namespace differs from the majority's: quarantined here, to be resynced from the ensemble",
		"namespace", root, "zxid", fmt.Sprintf("0x%x", zxid), "digest", fmt.Sprintf("%016x", got), "majority", fmt.Sprintf("%016x", want))
	s.quar.add(quarantined{Name: name, Since: zxid, Reason: why})
	go s.closeQuarantinedWatchers()
	if err := replica.MarkForResync(s.cfg.ReplicaDir(), why); err != nil {
		s.log.Error("marking the replica for a resync", "err", err)
		return
	}
	_, voters, _ := s.membership.get()
	if !spareForResync(voters, s.cfg.ServerID, name, want, byMember) {
		s.log.Warn("staying up with the namespace quarantined: the members that agree on it are no quorum without this one, "+
			"which votes only once registered anew after a resync; deciding again at the next checkpoint", "namespace", root)
		return
	}
	s.stopForResync(why)
}

// spareForResync reports whether the members other than self that
// reported digest want for namespace name form a quorum of voters: the
// ensemble can then register self anew while it resyncs.
func spareForResync(voters quorum.Config, self gpaxos.ID, name string, want uint64, byMember map[gpaxos.ID]digestReport) bool {
	return voters.IsQuorum(func(id quorum.ID) bool {
		rep, ok := byMember[id]
		return id != self && ok && rep[name] == want
	})
}

// closeQuarantinedWatchers closes every connection that watches a path in
// a quarantined namespace: its client re-registers the watches on a
// member that holds the namespace whole, which fires what it missed.
func (s *Server) closeQuarantinedWatchers() {
	for _, c := range s.sortedConns() {
		s.watchMu.Lock()
		d, e, ch, p, pr := s.watches.WatchesOf(c.id)
		s.watchMu.Unlock()
		for _, path := range slices.Concat(d, e, ch, p, pr) {
			if s.quar.holds(path) {
				c.close("it watches a namespace quarantined on this server")
				break
			}
		}
	}
}

// divergeNamespace applies "diverge NAME" (fault injection): it changes
// namespace NAME's root on this server alone, as damage in memory would,
// by applying a setData outside the log (with the session of any client,
// since the tree applies writes of sessions only). The next checkpoint
// finds this member the odd one out.
func (s *Server) divergeNamespace(spec string) error {
	f := strings.Fields(spec)
	if len(f) != 2 {
		return fmt.Errorf("want diverge NAME")
	}
	ns, ok := s.cfg.Namespaces.Lookup(f[1])
	if !ok {
		return fmt.Errorf("diverge: no namespace %q is declared", f[1])
	}
	s.treeMu.Lock()
	defer s.treeMu.Unlock()
	sessions := s.tree.Sessions()
	if len(sessions) == 0 {
		return fmt.Errorf("diverge: no session to write with")
	}
	e := &txn.Entry{Zxid: s.tree.LastZxid(), Session: sessions[0].ID,
		Op: txn.Op{Kind: txn.KindSetData, Path: ns.Root(), Data: []byte("diverged on this member alone"), Version: -1}}
	if res, _ := s.tree.Apply(e); res.Err != zkproto.OK {
		return fmt.Errorf("diverge: setData %s: %v", ns.Root(), res.Err)
	}
	s.log.Warn("fault injection: namespace changed on this member alone", "namespace", ns.Root())
	return nil
}
