// Package watch is a server's watch registry: which connection watches which
// path, in which mode, and who must be told when the data tree changes. It
// reproduces the client-visible behaviour of ZooKeeper 3.9's pair of
// WatchManagers (DataTree's dataWatches and childWatches) in one two-way
// index:
//
//   - one-shot data and exist watches (getData, exists) and child watches
//     (getChildren), removed when they fire;
//   - persistent watches (addWatch PERSISTENT) on a node, which see every
//     event on that node including NodeChildrenChanged, and stay;
//   - persistent-recursive watches (addWatch PERSISTENT_RECURSIVE), which see
//     NodeCreated, NodeDeleted and NodeDataChanged on the node and all its
//     descendants, never NodeChildrenChanged, and stay.
//
// ZooKeeper stores an exists watch on a missing node as a data watch, so the
// two behave identically here too (they fire on the same events and
// removeWatches/checkWatches with type Data covers both); they are kept apart
// only so that WatchesOf can hand them back as the client registered them.
//
// The registry is pure and not safe for concurrent use. It must be guarded by
// the lock that orders tree reads against applies: registering a watch has to
// be atomic with the read that returned the state it watches, or an event
// falling in between would be lost.
package watch
