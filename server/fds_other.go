//go:build !unix

package server

// fileDescriptors reports that descriptor counts are not available here;
// ZooKeeper's mntr leaves them out off Unix too.
func fileDescriptors() (open, limit uint64, ok bool) { return 0, 0, false }
