package zkproto

// This file holds the request bodies a client sends after the handshake,
// in zookeeper.jute field order. Which record goes with which opcode is
// decided by DecodeRequest. Fields are zookeeper.jute's under Go names; a
// type's comment says what is particular about one.

// CreateRequest is the body of create, create2 and createContainer (the
// last with Flags = ModeContainer).
type CreateRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
}

// Encode writes r.
func (r *CreateRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
}

// Decode reads r.
func (r *CreateRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
	return d.Err()
}

// CreateTTLRequest is the body of createTTL; TTL is in milliseconds.
type CreateTTLRequest struct {
	Path  string
	Data  []byte
	ACL   []ACL
	Flags int32
	TTL   int64
}

// Encode writes r.
func (r *CreateTTLRequest) Encode(e *Encoder) {
	e.String(r.Path)
	e.Buffer(r.Data)
	EncodeACLs(e, r.ACL)
	e.Int(r.Flags)
	e.Long(r.TTL)
}

// Decode reads r.
func (r *CreateTTLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.ACL = DecodeACLs(d)
	r.Flags = d.Int()
	r.TTL = d.Long()
	return d.Err()
}

// DeleteRequest is the body of delete; Version -1 matches any version.
type DeleteRequest struct {
	Path    string
	Version int32
}

// Encode writes r.
func (r *DeleteRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode reads r.
func (r *DeleteRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int()
	return d.Err()
}

// ExistsRequest is the body of exists.
type ExistsRequest struct {
	Path  string
	Watch bool
}

// Encode writes r.
func (r *ExistsRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads r.
func (r *ExistsRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// GetDataRequest is the body of getData (also an op of multiRead, where
// ZooKeeper ignores Watch).
type GetDataRequest struct {
	Path  string
	Watch bool
}

// Encode writes r.
func (r *GetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads r.
func (r *GetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// SetDataRequest is the body of setData; Version -1 matches any version.
type SetDataRequest struct {
	Path    string
	Data    []byte
	Version int32
}

// Encode writes r.
func (r *SetDataRequest) Encode(e *Encoder) { e.String(r.Path); e.Buffer(r.Data); e.Int(r.Version) }

// Decode reads r.
func (r *SetDataRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Data = d.Buffer()
	r.Version = d.Int()
	return d.Err()
}

// GetACLRequest is the body of getACL.
type GetACLRequest struct{ Path string }

// Encode writes r.
func (r *GetACLRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *GetACLRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// SetACLRequest is the body of setACL; Version is the expected aversion.
type SetACLRequest struct {
	Path    string
	ACL     []ACL
	Version int32
}

// Encode writes r.
func (r *SetACLRequest) Encode(e *Encoder) { e.String(r.Path); EncodeACLs(e, r.ACL); e.Int(r.Version) }

// Decode reads r.
func (r *SetACLRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.ACL = DecodeACLs(d)
	r.Version = d.Int()
	return d.Err()
}

// GetChildrenRequest is the body of getChildren (also an op of multiRead).
type GetChildrenRequest struct {
	Path  string
	Watch bool
}

// Encode writes r.
func (r *GetChildrenRequest) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads r.
func (r *GetChildrenRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// GetChildren2Request is the body of getChildren2, which also returns the
// parent's Stat.
type GetChildren2Request struct {
	Path  string
	Watch bool
}

// Encode writes r.
func (r *GetChildren2Request) Encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }

// Decode reads r.
func (r *GetChildren2Request) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// SyncRequest is the body of sync.
type SyncRequest struct{ Path string }

// Encode writes r.
func (r *SyncRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *SyncRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// CheckVersionRequest is the body of check, an op of multi that fails the
// transaction unless the node's version is Version (-1 matches any).
type CheckVersionRequest struct {
	Path    string
	Version int32
}

// Encode writes r.
func (r *CheckVersionRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Version) }

// Decode reads r.
func (r *CheckVersionRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Version = d.Int()
	return d.Err()
}

// GetAllChildrenNumberRequest is the body of getAllChildrenNumber.
type GetAllChildrenNumberRequest struct{ Path string }

// Encode writes r.
func (r *GetAllChildrenNumberRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *GetAllChildrenNumberRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// GetEphemeralsRequest is the body of getEphemerals: list the session's
// ephemeral nodes under PrefixPath.
type GetEphemeralsRequest struct{ PrefixPath string }

// Encode writes r.
func (r *GetEphemeralsRequest) Encode(e *Encoder) { e.String(r.PrefixPath) }

// Decode reads r.
func (r *GetEphemeralsRequest) Decode(d *Decoder) error { r.PrefixPath = d.String(); return d.Err() }

// AuthPacket is the body of auth (sent with xid -4). Type is unused by
// ZooKeeper and always 0.
type AuthPacket struct {
	Type   int32
	Scheme string
	Auth   []byte
}

// Encode writes r.
func (r *AuthPacket) Encode(e *Encoder) { e.Int(r.Type); e.String(r.Scheme); e.Buffer(r.Auth) }

// Decode reads r.
func (r *AuthPacket) Decode(d *Decoder) error {
	r.Type = d.Int()
	r.Scheme = d.String()
	r.Auth = d.Buffer()
	return d.Err()
}

// SetWatches re-registers a client's watches after it reconnects (op 101,
// xid -8). Watches on nodes changed after RelativeZxid fire at once.
type SetWatches struct {
	RelativeZxid int64
	DataWatches  []string
	ExistWatches []string
	ChildWatches []string
}

// Encode writes r.
func (r *SetWatches) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
}

// Decode reads r.
func (r *SetWatches) Decode(d *Decoder) error {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	return d.Err()
}

// SetWatches2 is SetWatches plus persistent watches (op 105, xid -8);
// clients send it only when they hold persistent watches.
type SetWatches2 struct {
	RelativeZxid               int64
	DataWatches                []string
	ExistWatches               []string
	ChildWatches               []string
	PersistentWatches          []string
	PersistentRecursiveWatches []string
}

// Encode writes r.
func (r *SetWatches2) Encode(e *Encoder) {
	e.Long(r.RelativeZxid)
	e.Strings(r.DataWatches)
	e.Strings(r.ExistWatches)
	e.Strings(r.ChildWatches)
	e.Strings(r.PersistentWatches)
	e.Strings(r.PersistentRecursiveWatches)
}

// Decode reads r.
func (r *SetWatches2) Decode(d *Decoder) error {
	r.RelativeZxid = d.Long()
	r.DataWatches = d.Strings()
	r.ExistWatches = d.Strings()
	r.ChildWatches = d.Strings()
	r.PersistentWatches = d.Strings()
	r.PersistentRecursiveWatches = d.Strings()
	return d.Err()
}

// AddWatchRequest is the body of addWatch; Mode is AddWatchPersistent or
// AddWatchPersistentRecursive.
type AddWatchRequest struct {
	Path string
	Mode int32
}

// Encode writes r.
func (r *AddWatchRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(r.Mode) }

// Decode reads r.
func (r *AddWatchRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Mode = d.Int()
	return d.Err()
}

// CheckWatchesRequest is the body of checkWatches.
type CheckWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode writes r.
func (r *CheckWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }

// Decode reads r.
func (r *CheckWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
	return d.Err()
}

// RemoveWatchesRequest is the body of removeWatches.
type RemoveWatchesRequest struct {
	Path string
	Type WatcherType
}

// Encode writes r.
func (r *RemoveWatchesRequest) Encode(e *Encoder) { e.String(r.Path); e.Int(int32(r.Type)) }

// Decode reads r.
func (r *RemoveWatchesRequest) Decode(d *Decoder) error {
	r.Path = d.String()
	r.Type = WatcherType(d.Int())
	return d.Err()
}

// ReconfigRequest is the body of reconfig. The three server lists are
// comma-separated; CurConfigID -1 skips the config-version check.
type ReconfigRequest struct {
	JoiningServers string
	LeavingServers string
	NewMembers     string
	CurConfigID    int64
}

// Encode writes r.
func (r *ReconfigRequest) Encode(e *Encoder) {
	e.String(r.JoiningServers)
	e.String(r.LeavingServers)
	e.String(r.NewMembers)
	e.Long(r.CurConfigID)
}

// Decode reads r.
func (r *ReconfigRequest) Decode(d *Decoder) error {
	r.JoiningServers = d.String()
	r.LeavingServers = d.String()
	r.NewMembers = d.String()
	r.CurConfigID = d.Long()
	return d.Err()
}

// GetSASLRequest is the body of sasl: one SASL challenge-response token.
type GetSASLRequest struct{ Token []byte }

// Encode writes r.
func (r *GetSASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads r.
func (r *GetSASLRequest) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }
