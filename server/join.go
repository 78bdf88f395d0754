package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/giraffe-coord/giraffe/internal/members"
	"github.com/giraffe-coord/giraffe/internal/quorum"
)

// joinedFile, in a joined server's data directory, records what the
// ensemble said when the server joined, so that a restart needs no --join.
const joinedFile = "ensemble.json"

// AdminRequest posts a membership change ("join" or "leave") to a member's
// admin address, following the answers that name the leader, and returns
// the leader's answer.
func AdminRequest(ctx context.Context, adminAddr, op string, req MemberInfo) (MembershipInfo, error) {
	var info MembershipInfo
	body, err := json.Marshal(req)
	if err != nil {
		return info, err
	}
	addr := adminAddr
	var lastErr error
	for attempt := 0; attempt < 60; attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(250 * time.Millisecond):
			case <-ctx.Done():
				return info, fmt.Errorf("%s: %w (last error: %v)", op, ctx.Err(), lastErr)
			}
		}
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/"+op, bytes.NewReader(body))
		if err != nil {
			return info, err
		}
		resp, err := http.DefaultClient.Do(hr)
		if err != nil {
			lastErr, addr = err, adminAddr
			continue
		}
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return info, json.Unmarshal(raw, &info)
		case http.StatusMisdirectedRequest:
			var redirect struct {
				Leader string `json:"leader_admin"`
			}
			json.Unmarshal(raw, &redirect)
			lastErr = fmt.Errorf("%s asked %s, which does not lead", op, addr)
			addr = adminAddr
			if redirect.Leader != "" {
				addr = redirect.Leader
			}
		case http.StatusConflict, http.StatusBadRequest, http.StatusNotFound:
			return info, fmt.Errorf("%s refused by %s: %s", op, addr, bytes.TrimSpace(raw))
		default:
			lastErr = fmt.Errorf("%s at %s: %s: %s", op, addr, resp.Status, bytes.TrimSpace(raw))
		}
	}
	return info, lastErr
}

// Ensemble returns the ensemble configuration a server joined as info.ID
// starts with.
func (info MembershipInfo) Ensemble() Ensemble {
	e := Ensemble{Shape: members.Shape{Trees: info.Trees, Children: info.Children, Classic: info.Classic},
		Tick: time.Duration(info.TickMs) * time.Millisecond, ElectionTicks: info.ElectionTicks, ClusterName: info.Cluster}
	for _, m := range info.Members {
		e.Members = append(e.Members, members.Member{ID: m.ID, Peer: m.Peer, Client: m.Client, Admin: m.Admin})
	}
	v := quorum.Config{Groups: info.Groups}
	e.Joined = &v
	return e
}

// SaveJoined records info in dataDir.
func SaveJoined(dataDir string, info MembershipInfo) error {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dataDir, joinedFile+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dataDir, joinedFile))
}

// LoadJoined reads what SaveJoined recorded; ok is false when dataDir holds
// none (the server never joined).
func LoadJoined(dataDir string) (info MembershipInfo, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, joinedFile))
	if errors.Is(err, os.ErrNotExist) {
		return info, false, nil
	}
	if err != nil {
		return info, false, err
	}
	return info, true, json.Unmarshal(b, &info)
}
