package zkproto

// This file holds the reply bodies the server sends after a ReplyHeader
// whose Err is OK, and the watch notification, in zookeeper.jute field
// order. Replies with no body (delete, setWatches, auth, ...) have no
// record. Fields are zookeeper.jute's under Go names; a type's comment says
// what is particular about one.

// CreateResponse answers create with the created path (which differs from
// the requested one for sequential nodes).
type CreateResponse struct{ Path string }

// Encode writes r.
func (r *CreateResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *CreateResponse) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// Create2Response answers create2, createContainer and createTTL.
type Create2Response struct {
	Path string
	Stat Stat
}

// Encode writes r.
func (r *Create2Response) Encode(e *Encoder) { e.String(r.Path); r.Stat.Encode(e) }

// Decode reads r.
func (r *Create2Response) Decode(d *Decoder) error { r.Path = d.String(); return r.Stat.Decode(d) }

// ExistsResponse answers exists for a node that exists (a missing node is
// a NONODE reply without a body).
type ExistsResponse struct{ Stat Stat }

// Encode writes r.
func (r *ExistsResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *ExistsResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetDataResponse answers getData (and reconfig, with the new config).
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode writes r.
func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode reads r.
func (r *GetDataResponse) Decode(d *Decoder) error { r.Data = d.Buffer(); return r.Stat.Decode(d) }

// SetDataResponse answers setData with the node's new Stat.
type SetDataResponse struct{ Stat Stat }

// Encode writes r.
func (r *SetDataResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *SetDataResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode writes r.
func (r *GetACLResponse) Encode(e *Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode reads r.
func (r *GetACLResponse) Decode(d *Decoder) error { r.ACL = DecodeACLs(d); return r.Stat.Decode(d) }

// SetACLResponse answers setACL with the node's new Stat.
type SetACLResponse struct{ Stat Stat }

// Encode writes r.
func (r *SetACLResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *SetACLResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetChildrenResponse answers getChildren with the children's names (not
// paths).
type GetChildrenResponse struct{ Children []string }

// Encode writes r.
func (r *GetChildrenResponse) Encode(e *Encoder) { e.Strings(r.Children) }

// Decode reads r.
func (r *GetChildrenResponse) Decode(d *Decoder) error { r.Children = d.Strings(); return d.Err() }

// GetChildren2Response answers getChildren2.
type GetChildren2Response struct {
	Children []string
	Stat     Stat
}

// Encode writes r.
func (r *GetChildren2Response) Encode(e *Encoder) { e.Strings(r.Children); r.Stat.Encode(e) }

// Decode reads r.
func (r *GetChildren2Response) Decode(d *Decoder) error {
	r.Children = d.Strings()
	return r.Stat.Decode(d)
}

// SyncResponse answers sync with the requested path.
type SyncResponse struct{ Path string }

// Encode writes r.
func (r *SyncResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *SyncResponse) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// GetAllChildrenNumberResponse answers getAllChildrenNumber with the
// number of descendants of the node (not counting the node).
type GetAllChildrenNumberResponse struct{ TotalNumber int32 }

// Encode writes r.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) { e.Int(r.TotalNumber) }

// Decode reads r.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) error {
	r.TotalNumber = d.Int()
	return d.Err()
}

// GetEphemeralsResponse answers getEphemerals with full paths.
type GetEphemeralsResponse struct{ Ephemerals []string }

// Encode writes r.
func (r *GetEphemeralsResponse) Encode(e *Encoder) { e.Strings(r.Ephemerals) }

// Decode reads r.
func (r *GetEphemeralsResponse) Decode(d *Decoder) error { r.Ephemerals = d.Strings(); return d.Err() }

// ClientInfo is one identity of a session in a whoAmI reply (a record of
// the org.apache.zookeeper.data module).
type ClientInfo struct {
	AuthScheme string
	User       string
}

// Encode writes c.
func (c *ClientInfo) Encode(e *Encoder) { e.String(c.AuthScheme); e.String(c.User) }

// Decode reads c.
func (c *ClientInfo) Decode(d *Decoder) error {
	c.AuthScheme = d.String()
	c.User = d.String()
	return d.Err()
}

// WhoAmIResponse answers whoAmI with the session's authenticated ids.
type WhoAmIResponse struct{ ClientInfo []ClientInfo }

// Encode writes r; a nil list is jute's null vector.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	if r.ClientInfo == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(r.ClientInfo)))
	for i := range r.ClientInfo {
		r.ClientInfo[i].Encode(e)
	}
}

// Decode reads r; a null vector decodes as nil.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	r.ClientInfo = nil
	n, ok := d.VectorLen(8) // two strings of at least their 4-byte length
	if !ok {
		return d.Err()
	}
	infos := make([]ClientInfo, n)
	for i := range infos {
		if infos[i].Decode(d) != nil {
			return d.Err()
		}
	}
	r.ClientInfo = infos
	return nil
}

// WatcherEvent is the body of a notification (xid -1). Path is the
// server-side path; the client strips its chroot.
type WatcherEvent struct {
	Type  EventType   // what happened to the node
	State KeeperState // the session's state (SyncConnected for node events)
	Path  string      // which node
}

// Encode writes r.
func (r *WatcherEvent) Encode(e *Encoder) {
	e.Int(int32(r.Type))
	e.Int(int32(r.State))
	e.String(r.Path)
}

// Decode reads r.
func (r *WatcherEvent) Decode(d *Decoder) error {
	r.Type = EventType(d.Int())
	r.State = KeeperState(d.Int())
	r.Path = d.String()
	return d.Err()
}

// ErrorResponse carries an error code: the result of a failed op in a
// multi response, and the body of addWatch's reply.
type ErrorResponse struct {
	Err Code // the error
}

// Encode writes r.
func (r *ErrorResponse) Encode(e *Encoder) { e.Int(int32(r.Err)) }

// Decode reads r.
func (r *ErrorResponse) Decode(d *Decoder) error { r.Err = Code(d.Int()); return d.Err() }

// SetSASLResponse answers sasl with the server's next token.
type SetSASLResponse struct{ Token []byte }

// Encode writes r.
func (r *SetSASLResponse) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads r.
func (r *SetSASLResponse) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }
