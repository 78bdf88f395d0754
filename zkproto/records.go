package zkproto

// Record is a jute record: it appends itself to an Encoder and reads itself
// from a Decoder. Decode never panics: on malformed or truncated input it
// returns an error (the Decoder's sticky error) and leaves the record in an
// unspecified but safe state. Decoded byte slices are copies, so a record
// may outlive the frame it came from.
type Record interface {
	// Encode appends the record to e.
	Encode(*Encoder)
	// Decode reads the record from d.
	Decode(*Decoder) error
}

// RequestHeader precedes every request after the handshake.
type RequestHeader struct {
	Xid Xid    // the client's request number, echoed in the reply; negative for special requests
	Op  OpCode // what the body is
}

// Encode writes h.
func (h *RequestHeader) Encode(e *Encoder) { e.Int(int32(h.Xid)); e.Int(int32(h.Op)) }

// Decode reads h.
func (h *RequestHeader) Decode(d *Decoder) error {
	h.Xid = Xid(d.Int())
	h.Op = OpCode(d.Int())
	return d.Err()
}

// ReplyHeader precedes every reply and notification. When Err is not OK
// the reply has no body.
type ReplyHeader struct {
	Xid  Xid   // the request's xid (-1 for a notification)
	Zxid int64 // the server's last applied zxid when it answered; a notification's change
	Err  Code  // OK, or the error the request failed with
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

// ConnectRequest opens or resumes a session; it is the first frame of a
// connection and has no request header. The readOnly byte is not part of
// zookeeper.jute: ZooKeeper reads it by hand after the record and treats
// its absence as an old (pre-3.4) client, so HasReadOnly records whether it
// was present and the reply can take the same form.
type ConnectRequest struct {
	ProtocolVersion int32  // 0
	LastZxidSeen    int64  // the largest zxid the client has seen
	TimeOut         int32  // requested session timeout, ms
	SessionID       int64  // 0 for a new session, else the session to resume
	Passwd          []byte // the session's password when resuming
	ReadOnly        bool   // the client accepts a read-only server
	HasReadOnly     bool   // the readOnly byte was (or is to be) on the wire
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
	r.ReadOnly, r.HasReadOnly = optionalBool(d)
	return d.Err()
}

// ConnectResponse answers a ConnectRequest; it has no reply header. A
// TimeOut of 0 tells the client its session is expired. As in the request,
// the trailing readOnly byte is optional.
type ConnectResponse struct {
	ProtocolVersion int32  // 0
	TimeOut         int32  // negotiated session timeout, ms; 0: the session is expired
	SessionID       int64  // the session's id
	Passwd          []byte // the session's password, for resuming it elsewhere
	ReadOnly        bool   // the server is read-only
	HasReadOnly     bool   // the readOnly byte was (or is to be) on the wire
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
	r.ReadOnly, r.HasReadOnly = optionalBool(d)
	return d.Err()
}

// optionalBool reads the handshake's trailing readOnly byte if the record
// so far decoded and a byte remains, as ProtocolManager does.
func optionalBool(d *Decoder) (v, present bool) {
	if d.Err() != nil || d.Remaining() == 0 {
		return false, false
	}
	return d.Bool(), true
}

// Compile-time checks that every record is a Record.
var (
	_ Record = (*Stat)(nil)
	_ Record = (*Id)(nil)
	_ Record = (*ACL)(nil)
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
	_ Record = (*ClientInfo)(nil)
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
