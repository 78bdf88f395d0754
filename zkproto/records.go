package zkproto

// Record is a jute record: it writes itself to an Encoder and reads itself
// from a Decoder, failing cleanly on malformed input.
type Record interface {
	Encode(*Encoder)
	Decode(*Decoder) error
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid Xid
	Op  OpCode
}

// Encode writes h.
func (h *RequestHeader) Encode(e *Encoder) { e.Int(int32(h.Xid)); e.Int(int32(h.Op)) }

// Decode reads h.
func (h *RequestHeader) Decode(d *Decoder) error {
	h.Xid = Xid(d.Int())
	h.Op = OpCode(d.Int())
	return d.Err()
}

// ReplyHeader precedes every reply and notification.
type ReplyHeader struct {
	Xid  Xid
	Zxid int64
	Err  Code
}

// Encode writes h.
func (h *ReplyHeader) Encode(e *Encoder) { e.Int(int32(h.Xid)); e.Long(h.Zxid); e.Int(int32(h.Err)) }

// Decode reads h.
func (h *ReplyHeader) Decode(d *Decoder) error {
	h.Xid = Xid(d.Int())
	h.Zxid = d.Long()
	h.Err = Code(d.Int())
	return d.Err()
}

// ConnectRequest opens or resumes a session; it has no request header.
// Clients older than 3.4 omit the readOnly byte; HasReadOnly records
// whether it was present so the reply can take the same form.
type ConnectRequest struct {
	ProtocolVersion int32
	LastZxidSeen    int64
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode writes r (the readOnly byte only when HasReadOnly).
func (r *ConnectRequest) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Long(r.LastZxidSeen)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads r, accepting the request with or without the readOnly byte.
func (r *ConnectRequest) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int()
	r.LastZxidSeen = d.Long()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	if d.Err() == nil && d.Remaining() > 0 {
		r.ReadOnly = d.Bool()
		r.HasReadOnly = true
	}
	return d.Err()
}

// ConnectResponse answers a ConnectRequest; it has no reply header. A
// TimeOut of 0 tells the client its session is expired.
type ConnectResponse struct {
	ProtocolVersion int32
	TimeOut         int32
	SessionID       int64
	Passwd          []byte
	ReadOnly        bool
	HasReadOnly     bool
}

// Encode writes r (the readOnly byte only when HasReadOnly).
func (r *ConnectResponse) Encode(e *Encoder) {
	e.Int(r.ProtocolVersion)
	e.Int(r.TimeOut)
	e.Long(r.SessionID)
	e.Buffer(r.Passwd)
	if r.HasReadOnly {
		e.Bool(r.ReadOnly)
	}
}

// Decode reads r, with or without the readOnly byte.
func (r *ConnectResponse) Decode(d *Decoder) error {
	r.ProtocolVersion = d.Int()
	r.TimeOut = d.Int()
	r.SessionID = d.Long()
	r.Passwd = d.Buffer()
	if d.Err() == nil && d.Remaining() > 0 {
		r.ReadOnly = d.Bool()
		r.HasReadOnly = true
	}
	return d.Err()
}

// CreateRequest is the body of create, create2 and createContainer.
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

// CreateTTLRequest is the body of createTTL.
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

// CreateResponse answers create.
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

// DeleteRequest is the body of delete.
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

// pathWatch is the shape shared by exists, getData and getChildren(2).
type pathWatch struct {
	Path  string
	Watch bool
}

func (r *pathWatch) encode(e *Encoder) { e.String(r.Path); e.Bool(r.Watch) }
func (r *pathWatch) decode(d *Decoder) error {
	r.Path = d.String()
	r.Watch = d.Bool()
	return d.Err()
}

// ExistsRequest is the body of exists.
type ExistsRequest pathWatch

// Encode writes r.
func (r *ExistsRequest) Encode(e *Encoder) { (*pathWatch)(r).encode(e) }

// Decode reads r.
func (r *ExistsRequest) Decode(d *Decoder) error { return (*pathWatch)(r).decode(d) }

// GetDataRequest is the body of getData.
type GetDataRequest pathWatch

// Encode writes r.
func (r *GetDataRequest) Encode(e *Encoder) { (*pathWatch)(r).encode(e) }

// Decode reads r.
func (r *GetDataRequest) Decode(d *Decoder) error { return (*pathWatch)(r).decode(d) }

// GetChildrenRequest is the body of getChildren.
type GetChildrenRequest pathWatch

// Encode writes r.
func (r *GetChildrenRequest) Encode(e *Encoder) { (*pathWatch)(r).encode(e) }

// Decode reads r.
func (r *GetChildrenRequest) Decode(d *Decoder) error { return (*pathWatch)(r).decode(d) }

// GetChildren2Request is the body of getChildren2.
type GetChildren2Request pathWatch

// Encode writes r.
func (r *GetChildren2Request) Encode(e *Encoder) { (*pathWatch)(r).encode(e) }

// Decode reads r.
func (r *GetChildren2Request) Decode(d *Decoder) error { return (*pathWatch)(r).decode(d) }

// ExistsResponse answers exists.
type ExistsResponse struct{ Stat Stat }

// Encode writes r.
func (r *ExistsResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *ExistsResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetDataResponse answers getData.
type GetDataResponse struct {
	Data []byte
	Stat Stat
}

// Encode writes r.
func (r *GetDataResponse) Encode(e *Encoder) { e.Buffer(r.Data); r.Stat.Encode(e) }

// Decode reads r.
func (r *GetDataResponse) Decode(d *Decoder) error { r.Data = d.Buffer(); return r.Stat.Decode(d) }

// SetDataRequest is the body of setData.
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

// SetDataResponse answers setData.
type SetDataResponse struct{ Stat Stat }

// Encode writes r.
func (r *SetDataResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *SetDataResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetACLRequest is the body of getACL.
type GetACLRequest struct{ Path string }

// Encode writes r.
func (r *GetACLRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *GetACLRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// GetACLResponse answers getACL.
type GetACLResponse struct {
	ACL  []ACL
	Stat Stat
}

// Encode writes r.
func (r *GetACLResponse) Encode(e *Encoder) { EncodeACLs(e, r.ACL); r.Stat.Encode(e) }

// Decode reads r.
func (r *GetACLResponse) Decode(d *Decoder) error { r.ACL = DecodeACLs(d); return r.Stat.Decode(d) }

// SetACLRequest is the body of setACL.
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

// SetACLResponse answers setACL.
type SetACLResponse struct{ Stat Stat }

// Encode writes r.
func (r *SetACLResponse) Encode(e *Encoder) { r.Stat.Encode(e) }

// Decode reads r.
func (r *SetACLResponse) Decode(d *Decoder) error { return r.Stat.Decode(d) }

// GetChildrenResponse answers getChildren.
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

// SyncRequest is the body of sync.
type SyncRequest struct{ Path string }

// Encode writes r.
func (r *SyncRequest) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *SyncRequest) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// SyncResponse answers sync.
type SyncResponse struct{ Path string }

// Encode writes r.
func (r *SyncResponse) Encode(e *Encoder) { e.String(r.Path) }

// Decode reads r.
func (r *SyncResponse) Decode(d *Decoder) error { r.Path = d.String(); return d.Err() }

// CheckVersionRequest is the body of check (in a multi).
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

// GetAllChildrenNumberResponse answers getAllChildrenNumber.
type GetAllChildrenNumberResponse struct{ TotalNumber int32 }

// Encode writes r.
func (r *GetAllChildrenNumberResponse) Encode(e *Encoder) { e.Int(r.TotalNumber) }

// Decode reads r.
func (r *GetAllChildrenNumberResponse) Decode(d *Decoder) error {
	r.TotalNumber = d.Int()
	return d.Err()
}

// GetEphemeralsRequest is the body of getEphemerals.
type GetEphemeralsRequest struct{ PrefixPath string }

// Encode writes r.
func (r *GetEphemeralsRequest) Encode(e *Encoder) { e.String(r.PrefixPath) }

// Decode reads r.
func (r *GetEphemeralsRequest) Decode(d *Decoder) error { r.PrefixPath = d.String(); return d.Err() }

// GetEphemeralsResponse answers getEphemerals.
type GetEphemeralsResponse struct{ Ephemerals []string }

// Encode writes r.
func (r *GetEphemeralsResponse) Encode(e *Encoder) { e.Strings(r.Ephemerals) }

// Decode reads r.
func (r *GetEphemeralsResponse) Decode(d *Decoder) error { r.Ephemerals = d.Strings(); return d.Err() }

// AuthPacket is the body of auth (xid -4).
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

// SetWatches re-registers watches after a reconnect (xid -8).
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

// SetWatches2 is SetWatches plus persistent watches (xid -8, op 105).
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

// AddWatchRequest is the body of addWatch.
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

// ClientInfo is one identity in a whoAmI reply.
type ClientInfo struct {
	AuthScheme string
	User       string
}

// WhoAmIResponse answers whoAmI.
type WhoAmIResponse struct{ ClientInfo []ClientInfo }

// Encode writes r.
func (r *WhoAmIResponse) Encode(e *Encoder) {
	if r.ClientInfo == nil {
		e.Int(-1)
		return
	}
	e.Int(int32(len(r.ClientInfo)))
	for _, c := range r.ClientInfo {
		e.String(c.AuthScheme)
		e.String(c.User)
	}
}

// Decode reads r.
func (r *WhoAmIResponse) Decode(d *Decoder) error {
	n, ok := d.VectorLen(8)
	if !ok {
		r.ClientInfo = nil
		return d.Err()
	}
	r.ClientInfo = make([]ClientInfo, n)
	for i := range r.ClientInfo {
		r.ClientInfo[i].AuthScheme = d.String()
		r.ClientInfo[i].User = d.String()
	}
	return d.Err()
}

// WatcherEvent is the body of a notification (xid -1).
type WatcherEvent struct {
	Type  EventType
	State KeeperState
	Path  string
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

// ErrorResponse carries an error code: a failed op of a multi, and the body
// of addWatch's reply.
type ErrorResponse struct{ Err Code }

// Encode writes r.
func (r *ErrorResponse) Encode(e *Encoder) { e.Int(int32(r.Err)) }

// Decode reads r.
func (r *ErrorResponse) Decode(d *Decoder) error { r.Err = Code(d.Int()); return d.Err() }

// ReconfigRequest is the body of reconfig.
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

// GetSASLRequest is the body of sasl.
type GetSASLRequest struct{ Token []byte }

// Encode writes r.
func (r *GetSASLRequest) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads r.
func (r *GetSASLRequest) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }

// SetSASLResponse answers sasl.
type SetSASLResponse struct{ Token []byte }

// Encode writes r.
func (r *SetSASLResponse) Encode(e *Encoder) { e.Buffer(r.Token) }

// Decode reads r.
func (r *SetSASLResponse) Decode(d *Decoder) error { r.Token = d.Buffer(); return d.Err() }

// Compile-time checks that every record is a Record.
var (
	_ Record = (*RequestHeader)(nil)
	_ Record = (*ReplyHeader)(nil)
	_ Record = (*ConnectRequest)(nil)
	_ Record = (*ConnectResponse)(nil)
	_ Record = (*CreateRequest)(nil)
	_ Record = (*CreateTTLRequest)(nil)
	_ Record = (*CreateResponse)(nil)
	_ Record = (*Create2Response)(nil)
	_ Record = (*DeleteRequest)(nil)
	_ Record = (*ExistsRequest)(nil)
	_ Record = (*ExistsResponse)(nil)
	_ Record = (*GetDataRequest)(nil)
	_ Record = (*GetDataResponse)(nil)
	_ Record = (*SetDataRequest)(nil)
	_ Record = (*SetDataResponse)(nil)
	_ Record = (*GetACLRequest)(nil)
	_ Record = (*GetACLResponse)(nil)
	_ Record = (*SetACLRequest)(nil)
	_ Record = (*SetACLResponse)(nil)
	_ Record = (*GetChildrenRequest)(nil)
	_ Record = (*GetChildrenResponse)(nil)
	_ Record = (*GetChildren2Request)(nil)
	_ Record = (*GetChildren2Response)(nil)
	_ Record = (*SyncRequest)(nil)
	_ Record = (*SyncResponse)(nil)
	_ Record = (*CheckVersionRequest)(nil)
	_ Record = (*GetAllChildrenNumberRequest)(nil)
	_ Record = (*GetAllChildrenNumberResponse)(nil)
	_ Record = (*GetEphemeralsRequest)(nil)
	_ Record = (*GetEphemeralsResponse)(nil)
	_ Record = (*AuthPacket)(nil)
	_ Record = (*SetWatches)(nil)
	_ Record = (*SetWatches2)(nil)
	_ Record = (*AddWatchRequest)(nil)
	_ Record = (*CheckWatchesRequest)(nil)
	_ Record = (*RemoveWatchesRequest)(nil)
	_ Record = (*WhoAmIResponse)(nil)
	_ Record = (*WatcherEvent)(nil)
	_ Record = (*ErrorResponse)(nil)
	_ Record = (*ReconfigRequest)(nil)
	_ Record = (*GetSASLRequest)(nil)
	_ Record = (*SetSASLResponse)(nil)
	_ Record = (*MultiHeader)(nil)
	_ Record = (*MultiRequest)(nil)
	_ Record = (*MultiResponse)(nil)
)
