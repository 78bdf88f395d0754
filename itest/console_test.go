package itest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/giraffe-coord/giraffe/internal/console"
	"github.com/giraffe-coord/giraffe/internal/members"
)

// ensembleView asks server s's console for the ensemble.
func ensembleView(t *testing.T, addr string) console.Ensemble {
	t.Helper()
	code, body := httpDo(t, http.MethodGet, addr, console.PathEnsemble, "", "")
	var e console.Ensemble
	if err := json.Unmarshal([]byte(body), &e); code != http.StatusOK || err != nil {
		t.Fatalf("GET %s on %s: %d %v\n%s", console.PathEnsemble, addr, code, err, body)
	}
	return e
}

// TestConsoleEnsembleView: any member's console, unauthenticated, shows
// the ensemble as the launcher sees it (the leader, a coordinator for each
// group, every member reachable with its group), and after the leader is
// killed, the new leader and the old one unreachable.
func TestConsoleEnsembleView(t *testing.T) {
	c := StartEnsemble(t, members.Shape{Nodes: 6, Trees: 2, Children: 2})
	leader, err := Leader(c, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	other := follower(c, leader)
	var e console.Ensemble
	deadline := time.Now().Add(10 * time.Second)
	for {
		e = ensembleView(t, other.AdminAddr)
		ok := e.Leader == leader && len(e.Members) == 6 && len(e.Groups) == 2
		for _, g := range e.Groups {
			ok = ok && g.Coordinator != 0 && len(g.Edges) == len(g.Members)-1
		}
		for _, m := range e.Members {
			ok = ok && m.Reachable && m.Group >= 0 && m.Lag >= 0
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("console view from %d: %+v, want leader %d, 2 groups with coordinators and trees, 6 reachable members",
				other.ID, e, leader)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, st := range c.Status() {
		for _, m := range e.Members {
			if m.ID == st.ID && (m.Group != st.Color || m.Admin != byID(t, c, st.ID).AdminAddr) {
				t.Errorf("server %d: console says group %d at %s, launcher group %d", m.ID, m.Group, m.Admin, st.Color)
			}
		}
	}

	// An administrator's create on one member's console is ordered through
	// the log and read on another's; without the token it is refused.
	body := `{"path":"/from-console","data":"eA=="}`
	if code, _ := httpDo(t, http.MethodPost, other.AdminAddr, console.PathZnode, "", body); code != http.StatusUnauthorized {
		t.Errorf("create without the token: %d, want 401", code)
	}
	if code, resp := httpDo(t, http.MethodPost, other.AdminAddr, console.PathZnode, clusterToken(t, c), body); code != http.StatusOK {
		t.Fatalf("create with the token on server %d: %d %s", other.ID, code, resp)
	}
	third := follower(c, other.ID)
	deadline = time.Now().Add(5 * time.Second)
	for {
		code, _ := httpDo(t, http.MethodGet, third.AdminAddr, console.PathZnode+"?path=/from-console", "", "")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %d does not show /from-console: %d", third.ID, code)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(15 * time.Second)
	for {
		e = ensembleView(t, other.AdminAddr)
		var old console.Member
		for _, m := range e.Members {
			if m.ID == leader {
				old = m
			}
		}
		if e.Leader != 0 && e.Leader != leader && !old.Reachable && old.Role == console.RoleUnreachable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after killing leader %d the console shows leader %d, old leader %+v", leader, e.Leader, old)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The timeline holds the change, as the survivors noticed it.
	deadline = time.Now().Add(5 * time.Second)
	for {
		code, body := httpDo(t, http.MethodGet, other.AdminAddr, console.PathTimeline, "", "")
		var tl map[members.ID][]console.Event
		if err := json.Unmarshal([]byte(body), &tl); code != http.StatusOK || err != nil {
			t.Fatalf("GET %s: %d %v\n%s", console.PathTimeline, code, err, body)
		}
		noticed := 0
		for _, evs := range tl {
			for _, ev := range evs {
				if ev.Kind == "leader" && ev.Text == fmt.Sprintf("leader %d, epoch %d", e.Leader, e.Epoch) {
					noticed++
				}
			}
		}
		if _, ok := tl[leader]; !ok && noticed >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the timeline does not show leader %d (epoch %d) from the survivors: %s", e.Leader, e.Epoch, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
