package recipes

import (
	"context"
	"errors"
	"strings"

	"github.com/giraffe-coord/giraffe/client"
	"github.com/giraffe-coord/giraffe/zkproto"
)

// Party is group membership in kazoo's layouts: a member is an ephemeral
// child of the party node, so it leaves by itself when its session ends.
//
// Two layouts, as kazoo has them. NewParty (kazoo.recipe.party.Party):
// the child is <hex id>__party__ and holds the identifier; listing the
// members reads every child. NewShallowParty (kazoo's ShallowParty): the
// child is <hex id>-<identifier>, so one listing gives the members (the
// identifier must then be a valid node name). A kazoo Party or ShallowParty
// on the same path sees the same members.
type Party struct {
	conn    *client.Conn
	path    string
	id      []byte
	node    string
	shallow bool
}

// partyMarker names a member of a (deep) Party.
const partyMarker = "__party__"

// NewParty returns a member of the party at path with the given identifier.
func NewParty(conn *client.Conn, path, identifier string) *Party {
	return &Party{conn: conn, path: path, id: []byte(identifier), node: newContenderPrefix() + partyMarker}
}

// NewShallowParty returns a member of the shallow party at path.
func NewShallowParty(conn *client.Conn, path, identifier string) *Party {
	return &Party{conn: conn, path: path, id: []byte(identifier), node: newContenderPrefix() + "-" + identifier, shallow: true}
}

// Join makes this member part of the party (joining twice is no error).
func (p *Party) Join(ctx context.Context) error {
	for {
		_, _, err := p.conn.Create(ctx, joinPath(p.path, p.node), p.id, client.Ephemeral, zkproto.OpenACLUnsafe)
		switch {
		case err == nil, errors.Is(err, zkproto.ErrNodeExists): // the name is ours alone
			return nil
		case errors.Is(err, zkproto.ErrNoNode):
			if err := ensurePath(ctx, p.conn, p.path, zkproto.OpenACLUnsafe); err != nil {
				return err
			}
		case isConnLoss(err):
			if err := pause(ctx, retryBackoff); err != nil {
				return err
			}
		default:
			return err
		}
	}
}

// Leave takes this member out of the party (leaving twice is no error).
func (p *Party) Leave(ctx context.Context) error {
	return deleteNode(ctx, p.conn, joinPath(p.path, p.node), nil)
}

// Members returns the identifiers of the current members.
func (p *Party) Members(ctx context.Context) ([]string, error) {
	kids, _, err := p.conn.Children(ctx, p.path)
	if errors.Is(err, zkproto.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range kids {
		if p.shallow {
			if i := strings.IndexByte(k, '-'); i >= 0 {
				out = append(out, k[i+1:])
			}
			continue
		}
		if !strings.Contains(k, partyMarker) {
			continue
		}
		data, _, err := p.conn.Get(ctx, joinPath(p.path, k))
		if errors.Is(err, zkproto.ErrNoNode) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, string(data))
	}
	return out, nil
}

// Watch returns the members and a channel that fires at the next change
// of membership (a one-shot child watch).
func (p *Party) Watch(ctx context.Context) ([]string, <-chan client.Event, error) {
	_, _, w, err := p.conn.ChildrenW(ctx, p.path)
	if err != nil {
		return nil, nil, err
	}
	m, err := p.Members(ctx)
	return m, w, err
}
