package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/giraffe-coord/giraffe/internal/adminapi"
	"github.com/giraffe-coord/giraffe/internal/datatree"
	"github.com/giraffe-coord/giraffe/internal/nsmap"
)

// This file reports each namespace's state: on the metrics port as JSON
// (adminapi.PathNamespaces, which `giraffe ns status` reads) and as
// Prometheus gauges labelled with the namespace's root. A namespace's
// digest, node count and last zxid are its subtree's (datatree's
// SubtreeInfo); the default namespace's are those of "/" and of every
// top-level subtree no namespace declares, summed (the last zxid: the
// largest).

// repairing reports whether this server is an ensemble member that lost
// its durable state at start (the replica set it aside) and has not yet
// both been registered as a new incarnation and applied the commit point
// it was registered at (replica.Status.RepairedAt), the point from which
// it holds everything it may have acknowledged before. The tree lock is
// held: the applier advances its position under it.
func (s *Server) repairing() bool {
	rp, ok := s.pipe.(*replicated)
	if !ok {
		return false
	}
	st := rp.rep.Status()
	return st.Recovering || rp.applied.Load() < int64(st.RepairedAt)
}

// namespacesStatus reads every namespace's status at one applied zxid.
func (s *Server) namespacesStatus() adminapi.NamespacesStatus {
	tab := s.cfg.Namespaces
	s.treeMu.RLock()
	applied := s.tree.LastZxid()
	subs := namespaceSubtrees(tab, s.tree)
	repairing := s.repairing()
	s.treeMu.RUnlock()

	st := adminapi.NamespacesStatus{ID: s.cfg.ServerID, AppliedZxid: applied}
	for i, ns := range append(tab.Namespaces(), nsmap.Default) {
		sub := subs[i]
		nst := adminapi.NamespaceStatus{
			Name: ns.Name, Root: ns.Root(), Level: ns.Level.String(), State: adminapi.StateHealthy,
			LastZxid: sub.LastZxid, Nodes: sub.Nodes, Digest: fmt.Sprintf("%016x", sub.Digest)}
		if q, ok := s.quar.lookup(ns.Name); ok {
			nst.State, nst.QuarantinedSince, nst.Reason = adminapi.StateQuarantined, q.Since, q.Reason
		} else if repairing {
			nst.State = adminapi.StateRepairing
		}
		st.Namespaces = append(st.Namespaces, nst)
	}
	return st
}

// namespaceSubtrees accounts for each namespace of tab in t: the declared
// ones in the table's order, then the default one (the sum over "/" and
// every top-level subtree no namespace declares). The caller holds the
// tree lock.
func namespaceSubtrees(tab nsmap.Table, t *datatree.Tree) []datatree.SubtreeInfo {
	subtrees := t.Subtrees()
	byName := make(map[string]datatree.SubtreeInfo, len(subtrees))
	var def datatree.SubtreeInfo
	for _, sub := range subtrees {
		if _, declared := tab.Lookup(sub.Name); declared {
			byName[sub.Name] = sub
			continue
		}
		def.Digest += sub.Digest
		def.Nodes += sub.Nodes
		def.LastZxid = max(def.LastZxid, sub.LastZxid)
	}
	out := make([]datatree.SubtreeInfo, 0, tab.Len()+1)
	for _, ns := range tab.Namespaces() {
		out = append(out, byName[ns.Name]) // a root not created yet accounts for nothing
	}
	return append(out, def)
}

// namespacesHandler serves GET adminapi.PathNamespaces.
func (s *Server) namespacesHandler(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.namespacesStatus())
}

// namespaceCollector exports the namespaces' gauges, read from the tree
// when scraped.
type namespaceCollector struct {
	s                                        *Server
	lastZxid, znodes, quarantined, repairing *prometheus.Desc
}

func newNamespaceCollector(s *Server) *namespaceCollector {
	return &namespaceCollector{s: s,
		quarantined: prometheus.NewDesc("giraffe_namespace_quarantined",
			"1 while the namespace is quarantined on this server (its data was found damaged), else 0.", []string{"ns"}, nil),
		repairing: prometheus.NewDesc("giraffe_namespace_repairing",
			"1 while this server, having lost its durable state, catches up with the ensemble, else 0.", []string{"ns"}, nil),
		lastZxid: prometheus.NewDesc("giraffe_namespace_last_zxid",
			"Last applied zxid that changed the namespace.", []string{"ns"}, nil),
		znodes: prometheus.NewDesc("giraffe_namespace_znodes",
			"Znodes in the namespace, its root included.", []string{"ns"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *namespaceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lastZxid
	ch <- c.znodes
	ch <- c.quarantined
	ch <- c.repairing
}

// Collect implements prometheus.Collector.
func (c *namespaceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, ns := range c.s.namespacesStatus().Namespaces {
		ch <- prometheus.MustNewConstMetric(c.lastZxid, prometheus.GaugeValue, float64(ns.LastZxid), ns.Root)
		ch <- prometheus.MustNewConstMetric(c.znodes, prometheus.GaugeValue, float64(ns.Nodes), ns.Root)
		ch <- prometheus.MustNewConstMetric(c.quarantined, prometheus.GaugeValue, stateGauge(ns.State, adminapi.StateQuarantined), ns.Root)
		ch <- prometheus.MustNewConstMetric(c.repairing, prometheus.GaugeValue, stateGauge(ns.State, adminapi.StateRepairing), ns.Root)
	}
}

// stateGauge is 1 when state is want, else 0: a gauge of one state.
func stateGauge(state, want string) float64 {
	if state == want {
		return 1
	}
	return 0
}
