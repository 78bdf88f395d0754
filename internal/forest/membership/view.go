package membership

import (
	"fmt"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

// ViewID orders membership views: Version counts membership changes, Epoch
// counts Rooters (it grows on every takeover). A view is newer than another
// if its epoch is higher, or its epoch is equal and its version higher; a new
// Rooter continues the versions of the view it took over, so versions never
// repeat within the history of one server.
type ViewID struct {
	Epoch   uint64
	Version uint64
}

// Newer reports whether a is a newer view than b.
func (a ViewID) Newer(b ViewID) bool {
	return a.Epoch > b.Epoch || a.Epoch == b.Epoch && a.Version > b.Version
}

// String formats the id as "epoch.version".
func (a ViewID) String() string { return fmt.Sprintf("%d.%d", a.Epoch, a.Version) }

// View is a server's membership view: its id, the Rooter that issued it, and
// the forest of its members. Forest is nil before a joining server has
// received any view. The Forest of a View obtained from a Node belongs to the
// node: read it, Clone it, never modify it.
type View struct {
	ID     ViewID
	Rooter forest.ServerID
	Forest *forest.Forest
}

// Member reports whether id is in the view.
func (v View) Member(id forest.ServerID) bool { return v.Forest != nil && v.Forest.Contains(id) }
