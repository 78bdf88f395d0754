package forest

import (
	"math"
	"strconv"
)

// ServerID names a server of the ensemble. It is the server's stable id (the
// ZooKeeper "myid"), chosen by the operator and carried in membership
// changes; the forest never derives anything from its numeric value except
// to break ties, which is what makes the construction deterministic.
type ServerID uint32

// None is the reserved ServerID meaning "no server" (the parent of a root,
// an absent entry in a Move or a Snapshot). Join rejects it.
const None ServerID = math.MaxUint32

// String returns the decimal id, or "none" for None.
func (id ServerID) String() string {
	if id == None {
		return "none"
	}
	return strconv.FormatUint(uint64(id), 10)
}

// Color is the index of a tree of the forest and of the group of servers that
// form that tree's interior: tree k is the tree of color k, and group k is the
// set of servers whose color is k. Colors run from 0 to Config.Trees-1.
type Color uint8
