package membership

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// MsgType is the kind of a membership message.
type MsgType uint8

// The membership messages. Every message carries the sender's view id (or,
// for MsgUpdate and MsgView, the id of the view it carries), so that any
// exchange reveals a lagging side.
const (
	// MsgViewReq asks for the receiver's full view: a joining server asks
	// any member; a lagging server asks a newer one.
	MsgViewReq MsgType = iota + 1
	// MsgView carries a full view (Snapshot). Sent in reply to MsgViewReq,
	// to a joining or removed server, and, tagged and disseminated down the
	// trees, by a Rooter that has just taken over.
	MsgView
	// MsgJoin asks the Rooter for admission and a color (the paper's color
	// request); it carries the joiner's address and the view it knows.
	MsgJoin
	// MsgUpdate carries one membership change and the view id it produces,
	// disseminated down the trees (tagged with a color), or sent directly to
	// a joiner whose view was one change behind.
	MsgUpdate
	// MsgHeartbeat renews the sender's lease at a neighbor.
	MsgHeartbeat
	// MsgSuspect reports to the Rooter that Subject's lease expired.
	MsgSuspect
	// MsgRooterDown tells the takeover candidates that the Rooter (Subject)
	// let its lease expire.
	MsgRooterDown
	// MsgAnnounce is a takeover candidate's bid: the view it holds, against
	// the failed Rooter Subject. Reply marks an answer to another bid.
	MsgAnnounce
)

var msgNames = [...]string{MsgViewReq: "ViewReq", MsgView: "View", MsgJoin: "Join", MsgUpdate: "Update",
	MsgHeartbeat: "Heartbeat", MsgSuspect: "Suspect", MsgRooterDown: "RooterDown", MsgAnnounce: "Announce"}

// String names the message type.
func (t MsgType) String() string {
	if int(t) < len(msgNames) && msgNames[t] != "" {
		return msgNames[t]
	}
	return fmt.Sprintf("MsgType(%d)", uint8(t))
}

// Message is one membership message. Fields a type does not use are zero.
type Message struct {
	Type     MsgType
	From, To forest.ServerID
	// View is the sender's view id, or for MsgUpdate and MsgView the id of
	// the view the message carries.
	View ViewID
	// Rooter is the Rooter of the carried view (MsgUpdate, MsgView).
	Rooter forest.ServerID
	// Subject is the server a MsgSuspect, MsgRooterDown or MsgAnnounce is
	// about.
	Subject forest.ServerID
	// Addr is the joiner's address (MsgJoin).
	Addr string
	// Change is the membership change of a MsgUpdate.
	Change forest.Change
	// Snapshot is the forest of a MsgView.
	Snapshot *forest.Snapshot
	// Disseminated marks a copy travelling down the trees; Tag and Color
	// then identify the message and the tree of this copy.
	Disseminated bool
	Tag          forest.MsgID
	Color        forest.Color
	// Reply marks a MsgAnnounce or MsgHeartbeat sent in answer to another.
	Reply bool
}

func (m Message) String() string {
	return fmt.Sprintf("%s %d->%d view %s subject %d", m.Type, m.From, m.To, m.View, m.Subject)
}
