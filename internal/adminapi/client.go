package adminapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
)

// retryEvery is how long the client waits before asking again after an
// answer that may change (no leader yet, a server unreachable).
const retryEvery = 250 * time.Millisecond

// ErrFaultsUnavailable is the error of a fault spec sent to a server that
// takes none: its fault injection is off (giraffe.faultInjection), or it is
// not an ensemble member.
var ErrFaultsUnavailable = errors.New("no fault injection at this server")

// ErrSnapshotUnavailable is wrapped by Snapshot's error when the server
// could not take a snapshot for now and may later: it does not serve
// (an ensemble member out of contact with a quorum), another snapshot is
// under way, or its place in the write order was lost or late.
var ErrSnapshotUnavailable = errors.New("no snapshot for now")

// Client asks servers' admin listeners. Its zero value sends no token,
// which only a metrics port's GET /membership accepts.
type Client struct {
	// Token is presented on every request (Authorization: Bearer); it is
	// the content of the servers' giraffe.adminTokenFile (ReadTokenFile).
	Token string
}

// Join asks the ensemble to add req's server, through any of the admin
// addresses admins, and returns the leader's answer: the membership with
// the server, its ID set to the server's id.
func (c Client) Join(ctx context.Context, admins []string, req JoinRequest) (Membership, error) {
	var m Membership
	return m, c.change(ctx, admins, PathJoin, req, &m)
}

// Leave asks the ensemble to remove server id, through any of the admin
// addresses admins, and returns the membership once the removal (and any
// move between groups it needs) has committed.
func (c Client) Leave(ctx context.Context, admins []string, id members.ID) (Membership, error) {
	var m Membership
	return m, c.change(ctx, admins, PathLeave, LeaveRequest{ID: id}, &m)
}

// Reconfig forwards a ZooKeeper reconfig to the leader, through any of
// the admin addresses admins, and returns its answer.
func (c Client) Reconfig(ctx context.Context, admins []string, req ReconfigRequest) (ReconfigAnswer, error) {
	var a ReconfigAnswer
	return a, c.change(ctx, admins, PathReconfig, req, &a)
}

// change posts a membership change until the leader answers it or ctx
// ends: an answer naming the leader sends the next attempt there; a
// server that cannot be reached, or answers that it cannot decide now,
// is asked again (the next of admins after a connection error); a change
// the ensemble refuses (409, 400, 404) or a refused token (401) ends it.
func (c Client) change(ctx context.Context, admins []string, path string, req, answer any) error {
	if len(admins) == 0 {
		return errors.New("no admin address to ask")
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	op := strings.TrimPrefix(path, "/")
	next := 0
	addr := admins[0]
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(retryEvery):
			case <-ctx.Done():
				return fmt.Errorf("%s: %w (last error: %v)", op, ctx.Err(), lastErr)
			}
		}
		code, raw, err := c.do(ctx, http.MethodPost, addr, path, "application/json", body)
		if err != nil {
			next = (next + 1) % len(admins)
			lastErr, addr = err, admins[next]
			continue
		}
		switch code {
		case http.StatusOK:
			return json.Unmarshal(raw, answer)
		case http.StatusMisdirectedRequest:
			var nl NotLeader
			json.Unmarshal(raw, &nl)
			lastErr = fmt.Errorf("%s asked %s, which does not lead", op, addr)
			addr = admins[next]
			if nl.LeaderAdmin != "" {
				addr = nl.LeaderAdmin
			}
		case http.StatusUnauthorized:
			return fmt.Errorf("%s at %s: %w", op, addr, ErrUnauthorized)
		case http.StatusConflict, http.StatusBadRequest, http.StatusNotFound:
			return fmt.Errorf("%s refused by %s: %s", op, addr, bytes.TrimSpace(raw))
		default:
			lastErr = fmt.Errorf("%s at %s: %d %s: %s", op, addr, code, http.StatusText(code), bytes.TrimSpace(raw))
		}
	}
}

// Get returns the membership as the server at addr (its admin listener,
// or its metrics port) knows it.
func (c Client) Get(ctx context.Context, addr string) (Membership, error) {
	var m Membership
	code, raw, err := c.do(ctx, http.MethodGet, addr, PathMembership, "", nil)
	if err != nil {
		return m, err
	}
	if code == http.StatusUnauthorized {
		return m, fmt.Errorf("membership at %s: %w", addr, ErrUnauthorized)
	}
	if code != http.StatusOK {
		return m, fmt.Errorf("membership: %d %s: %s", code, http.StatusText(code), bytes.TrimSpace(raw))
	}
	return m, json.Unmarshal(raw, &m)
}

// Fault applies a fault spec to the peer transport of the server at admin
// (transport.ParseFaultSpec: "drop ID P; delay ID D; block ID; isolate;
// heal") and returns the faults now in force there. A server without
// fault injection answers ErrFaultsUnavailable.
func (c Client) Fault(ctx context.Context, admin, spec string) (string, error) {
	code, raw, err := c.do(ctx, http.MethodPost, admin, PathFaults, "text/plain", []byte(spec))
	if err != nil {
		return "", err
	}
	switch code {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return "", fmt.Errorf("faults at %s: %w", admin, ErrUnauthorized)
	case http.StatusNotFound:
		return "", fmt.Errorf("%w: %s", ErrFaultsUnavailable, bytes.TrimSpace(raw))
	default:
		return "", errors.New(strings.TrimSpace(string(raw)))
	}
	return strings.TrimSpace(string(raw)), nil
}

// do sends one request, with the token when the client has one, and
// returns the status and up to 1 MiB of body.
func (c Client) do(ctx context.Context, method, addr, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, raw, err
}

// Snapshot asks the server at admin (its admin listener) for a snapshot of
// its committed tree, at or after every write acknowledged before the
// request, and returns the stream of the snapshot file (package snap's
// format) and the zxid the server announces for it. The caller reads the
// stream to its end and closes it.
func (c Client) Snapshot(ctx context.Context, admin string) (io.ReadCloser, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+PathSnapshot+"?streaming=true", nil)
	if err != nil {
		return nil, "", err
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	// A command that did not run answers a JSON object saying why, with
	// 200 when ZooKeeper does (a server that is not serving).
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "application/octet-stream" {
		return resp.Body, resp.Header.Get("last_zxid"), nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode == http.StatusUnauthorized {
		return nil, "", fmt.Errorf("snapshot at %s: %w", admin, ErrUnauthorized)
	}
	var answer struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &answer) != nil || answer.Error == "" {
		answer.Error = strings.TrimSpace(string(raw))
	}
	err = fmt.Errorf("snapshot at %s: %d %s: %s", admin, resp.StatusCode, http.StatusText(resp.StatusCode), answer.Error)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return nil, "", fmt.Errorf("%w: %w", ErrSnapshotUnavailable, err)
	}
	return nil, "", err
}
