// Package datatree is Giraffe's replicated state machine: the znode tree and
// the session table, with ZooKeeper 3.9's semantics.
//
// Apply is a pure function of (tree, entry). It never reads a clock, a random
// source or anything else outside its arguments: the time of a write, the
// issuing session and its authenticated ids all travel in the txn.Entry. It
// decides the outcome of the entry itself (a ZooKeeper error code is an
// outcome like any other, and leaves the tree as it was) and returns the
// watch triggers the entry caused, which the server maps to its watchers. So
// replicas that apply the same entries in the same order hold the same tree,
// give the same replies, and report the same Digest.
//
// The rules are those of ZooKeeper's PrepRequestProcessor (which decides a
// write's error) and DataTree (which applies it), checked in the same order so
// that a request with several faults gets ZooKeeper's error code: for example
// a create checks its ACL list before it looks for the parent, and a delete
// checks the parent's DELETE permission before it looks for the node.
//
// Stat fields follow DataNode.copyStat: a node stores how many children were
// ever created under it (the counter that names sequential children), and
// reports cversion as twice that minus its current number of children, that
// is creates plus deletes. Container and TTL nodes report ephemeralOwner 0.
//
// A Tree is not safe for concurrent use. The read methods (GetData, Children,
// Digest, WriteSnapshot, ...) do not modify the tree, so any number of them
// may run together under a read lock, but never concurrently with Apply.
// The data slices handed to Apply are retained, and the data GetData returns
// is shared with the tree: neither side may modify them.
package datatree
