package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/giraffe-coord/giraffe/internal/nsmap"
	"github.com/giraffe-coord/giraffe/internal/txn"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Namespaces (docs/namespaces.md). The configured table (Config.Namespaces,
// equal on every member: the peer handshake compares its hash) reaches the
// tree through the log as a declaration entry (txn.KindNamespaces), which
// creates the declared roots and publishes the table at
// /zookeeper/namespaces. A standalone server orders it at start, before it
// accepts a client; in an ensemble the leader proposes it whenever its tree
// does not declare the configured table (a fresh ensemble, a table changed
// across a restart), and a member serves no client until its own tree has
// declared it. Deleting a declared root, or the published table, is
// refused before ordering, like every check that depends on configuration.

// protectedPath reports whether path is a declared root or the published
// table, which no client may delete.
func (s *Server) protectedPath(path string) bool {
	tab := s.cfg.Namespaces
	return tab.Len() > 0 && (tab.IsRoot(path) || path == nsmap.ZnodePath)
}

// declarationEntry is the entry that declares the configured table.
func (s *Server) declarationEntry() *txn.Entry {
	return &txn.Entry{Op: txn.Op{Kind: txn.KindNamespaces, Data: s.cfg.Namespaces.Encode()}}
}

// declarePeriodStandalone is how often a standalone server checks that
// its tree still declares the configured table (only a super user's write
// to /zookeeper/namespaces can change that after its start).
const declarePeriodStandalone = 100 * time.Millisecond

// declareAtStart orders the declaration of the configured table on a
// standalone server whose tree does not hold it yet, and waits until it is
// applied.
func (s *Server) declareAtStart() error {
	s.treeMu.RLock()
	done := s.tree.Declares(s.cfg.Namespaces)
	s.treeMu.RUnlock()
	if done {
		return nil
	}
	applied := make(chan txn.Result, 1)
	if !s.pipe.submit(&proposal{entry: s.declarationEntry(), applied: func(res txn.Result, _ *txn.Entry) {
		s.noteDeclared()
		applied <- res
	}}) {
		return errors.New("declaring namespaces: server stopping")
	}
	select {
	case res := <-applied:
		if res.Err != zkproto.OK {
			return fmt.Errorf("declaring namespaces %s: %v", s.cfg.Namespaces, res.Err)
		}
		return nil
	case <-s.done:
		if err := s.Err(); err != nil {
			return fmt.Errorf("declaring namespaces: %w", err)
		}
		return errors.New("declaring namespaces: server stopping")
	}
}

// noteDeclared sets nsDeclared once the tree declares the configured
// table, and says so; an ensemble member serves only from then on. It is
// never cleared: a declared root cannot be deleted, so what a member
// served from stays, and declareLoop restores the published table should a
// super user overwrite it. The applier calls it, holding
// the tree lock.
func (s *Server) noteDeclared() {
	if s.nsDeclared.Load() || !s.tree.Declares(s.cfg.Namespaces) {
		return
	}
	s.nsDeclared.Store(true)
	s.log.Info("namespaces declared in the tree", "namespaces", s.cfg.Namespaces.String(),
		"zxid", fmt.Sprintf("0x%x", uint64(s.tree.LastZxid())))
	if s.cfg.Replicated() {
		s.actOnServing()
	}
}

// declareLoop runs on every server: while this server decides for the
// ensemble (the leader, or a standalone server) and its tree does not
// declare the configured table, it proposes the declaration, one at a
// time. Applying a declaration twice changes nothing, so a proposal that
// crosses a change of leader does no harm.
func (s *Server) declareLoop() {
	defer s.wg.Done()
	period := s.cfg.Ensemble.Tick
	if period <= 0 {
		period = declarePeriodStandalone
	}
	tk := time.NewTicker(period)
	defer tk.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-tk.C:
		}
		if s.declaring.Load() || !s.isLeader() {
			continue
		}
		s.treeMu.RLock()
		declared := s.tree.Declares(s.cfg.Namespaces)
		s.treeMu.RUnlock()
		if declared {
			continue
		}
		s.declaring.Store(true)
		done := func() { s.declaring.Store(false) }
		if !s.pipe.submit(&proposal{entry: s.declarationEntry(), abandoned: done,
			applied: func(txn.Result, *txn.Entry) { done() }}) {
			return
		}
	}
}

// sectionNames are the names of tab's namespaces, the subtrees snapshots
// checksum on their own (datatree.Tree.SetSnapshotSections): damage in one
// of them quarantines that namespace alone.
func sectionNames(tab nsmap.Table) []string {
	var names []string
	for _, ns := range tab.Namespaces() {
		names = append(names, ns.Name)
	}
	return names
}
