package members

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/giraffe-coord/giraffe/internal/forest"
)

func TestStaticJoinsInIDOrder(t *testing.T) {
	m := Static([]Member{{ID: 3, Peer: "h:3"}, {ID: 1, Peer: "h:1"}, {ID: 2, Peer: "h:2"}})
	if got := m.History(); got != "+1 +2 +3" {
		t.Errorf("history %q, want +1 +2 +3", got)
	}
	if m.Members[0].ID != 1 || m.Members[2].ID != 3 {
		t.Errorf("members not sorted: %+v", m.Members)
	}
	if x, ok := m.Member(2); !ok || x.Peer != "h:2" {
		t.Errorf("Member(2) = %+v, %v", x, ok)
	}
	if _, ok := m.Member(4); ok {
		t.Error("Member(4) found")
	}
	if got := m.PeerAddrs(2); !reflect.DeepEqual(got, map[ID]string{1: "h:1", 3: "h:3"}) {
		t.Errorf("PeerAddrs(2) = %v", got)
	}
}

func TestEncodeDecode(t *testing.T) {
	m := Membership{
		Members: []Member{
			{ID: 1, Peer: "127.0.0.1:3001", Client: "127.0.0.1:2181", Admin: "127.0.0.1:7001"},
			{ID: 2, Peer: "10.0.0.2:3002"},
			{ID: 12, Peer: "h:3012", Client: "h:2192", Admin: "h:7012"},
		},
		Changes: []forest.Change{joinChange(1), joinChange(2), joinChange(3), leaveChange(3), joinChange(12)},
	}
	enc := m.Encode()
	want := "server.1=127.0.0.1:3001:0:participant;127.0.0.1:2181\n" +
		"server.2=10.0.0.2:3002:0:participant\n" +
		"server.12=h:3012:0:participant;h:2192\n" +
		"giraffe.admin.1=127.0.0.1:7001\n" +
		"giraffe.admin.12=h:7012\n" +
		"giraffe.forest=+1 +2 +3 -3 +12\n"
	if string(enc) != want {
		t.Errorf("Encode:\n%s\nwant:\n%s", enc, want)
	}
	// The node carries a version line after the membership.
	got, err := Decode(append(enc, "version=100000003\n"...))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Errorf("Decode = %+v, want %+v", got, m)
	}
	// The election port is ignored, whatever it is.
	old := strings.ReplaceAll(string(enc), ":0:participant", ":3001:participant")
	if got, err := Decode([]byte(old)); err != nil || len(got.Members) != 3 || got.Members[0].Peer != "127.0.0.1:3001" {
		t.Errorf("Decode(%q) = %+v, %v", old, got, err)
	}
}

func TestDecodeRefusesGarbage(t *testing.T) {
	for _, in := range []string{
		"server.x=h:1:1:participant\n",
		"server.1=nohostport\n",
		"giraffe.admin.y=h:7\n",
		"giraffe.forest=+1 *2\n",
		"giraffe.forest=+1 +z\n",
	} {
		if m, err := Decode([]byte(in)); err == nil {
			t.Errorf("Decode(%q) = %+v, want an error", in, m)
		}
	}
}

// nine is a forest-9-3-3 ensemble as it starts.
func nine(t *testing.T) (Shape, Membership) {
	t.Helper()
	s, _ := ParseShape("forest-9-3-3")
	return s, Static(memberList(seq(9)))
}

func TestPlanJoin(t *testing.T) {
	s, m := nine(t)
	v, err := Voters(s, seq(9))
	if err != nil {
		t.Fatal(err)
	}
	classic, _ := ParseShape("classic-3")
	cm := Static(memberList(seq(3)))
	cv, _ := Voters(classic, seq(3))
	for _, tc := range []struct {
		name      string
		shape     Shape
		m         Membership
		voters    [][]ID
		x         Member
		server    ID
		group     int // of the one step; -1: no step
		refused   bool
		wantAfter [][]ID
	}{
		{name: "next free id, smallest group", shape: s, m: m, voters: v.Groups, x: Member{Peer: "h:3010"},
			server: 10, group: 0, wantAfter: [][]ID{ids(1, 4, 7, 10), ids(2, 5, 8), ids(3, 6, 9)}},
		{name: "asked-for id", shape: s, m: m, voters: v.Groups, x: Member{ID: 42, Peer: "h:3042"},
			server: 42, group: 0, wantAfter: [][]ID{ids(1, 4, 7, 42), ids(2, 5, 8), ids(3, 6, 9)}},
		{name: "free id above a voter without an address", shape: s, m: m, voters: [][]ID{ids(1, 4, 7, 20), ids(2, 5, 8), ids(3, 6, 9)},
			x: Member{Peer: "h:3021"}, server: 21, group: 0},
		{name: "retried join", shape: s, m: m, voters: v.Groups, x: Member{ID: 4, Peer: "127.0.0.1:3004"}, server: 4, group: -1},
		{name: "id taken", shape: s, m: m, voters: v.Groups, x: Member{ID: 4, Peer: "h:9999"}, server: 4, refused: true},
		{name: "classic", shape: classic, m: cm, voters: cv.Groups, x: Member{Peer: "h:3004"},
			server: 4, group: 0, wantAfter: [][]ID{ids(1, 2, 3, 4)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanJoin(tc.shape, tc.m, configOf(tc.voters), tc.x)
			if tc.refused {
				if !errors.Is(err, ErrRefused) {
					t.Fatalf("got %+v, %v; want ErrRefused", p, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Server != tc.server {
				t.Errorf("server %d, want %d", p.Server, tc.server)
			}
			if tc.group < 0 {
				if len(p.Steps) != 0 {
					t.Errorf("steps %+v, want none", p.Steps)
				}
				return
			}
			if len(p.Steps) != 1 {
				t.Fatalf("steps %+v, want one", p.Steps)
			}
			st := p.Steps[0]
			if st.Change.Server != tc.server || st.Change.Group != tc.group {
				t.Errorf("change %v, want server %d into group %d", st.Change, tc.server, tc.group)
			}
			if x, ok := st.After.Member(tc.server); !ok || x.Peer != tc.x.Peer {
				t.Errorf("membership after the step lacks the joiner: %+v", st.After.Members)
			}
			if tc.wantAfter != nil {
				after, err := p.Voters(configOf(tc.voters))
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(after.Groups, tc.wantAfter) {
					t.Errorf("voters after %v, want %v", after.Groups, tc.wantAfter)
				}
				if !st.Done(after) || st.Done(configOf(tc.voters)) {
					t.Error("Done does not tell the configurations before and after apart")
				}
			}
		})
	}
}

func TestPlanLeave(t *testing.T) {
	s, m := nine(t)
	v, _ := Voters(s, seq(9))
	// Server 1 leaves first: groups of 2, 3 and 3, within one of each other.
	p, err := PlanLeave(s, m, v, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 1 || p.Steps[0].Change.Server != 1 {
		t.Fatalf("leave 1: steps %+v, want one removal", p.Steps)
	}
	v1, err := p.Voters(v)
	if err != nil {
		t.Fatal(err)
	}
	m1 := p.Steps[0].After
	if _, ok := m1.Member(1); ok || m1.History() != "+1 +2 +3 +4 +5 +6 +7 +8 +9 -1" {
		t.Fatalf("membership after leave 1: %+v", m1)
	}
	// Then server 4: group 0 would keep one server against three, so the
	// forest recolors the last server of the largest group (8, of group
	// 1) into group 0. It moves first, then 4 goes.
	p, err = PlanLeave(s, m1, v1, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, st := range p.Steps {
		got = append(got, st.Change.String())
	}
	want := []string{"remove server 8", "add server 8 to group 0", "remove server 4"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("leave 4: %q, want %q", got, want)
	}
	after, err := p.Voters(v1)
	if err != nil {
		t.Fatal(err)
	}
	if w := [][]ID{ids(7, 8), ids(2, 5), ids(3, 6, 9)}; !reflect.DeepEqual(after.Groups, w) {
		t.Errorf("voters after %v, want %v", after.Groups, w)
	}
	if p.Steps[0].After.History() != m1.History() || p.Steps[2].After.History() != m1.History()+" -4" {
		t.Errorf("histories carried: %q, %q", p.Steps[0].After.History(), p.Steps[2].After.History())
	}
	for _, tc := range []struct {
		name   string
		shape  Shape
		m      Membership
		voters [][]ID
		id     ID
	}{
		{"not a member", s, m, v.Groups, 10},
		{"a member that does not vote", s, m, [][]ID{ids(2, 3), ids(4, 5), ids(6, 7, 8, 9)}, 1},
		{"the last member", Shape{Nodes: 1, Classic: true}, Static(memberList(seq(1))), [][]ID{ids(1)}, 1},
	} {
		if p, err := PlanLeave(tc.shape, tc.m, configOf(tc.voters), tc.id); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: got %+v, %v; want ErrRefused", tc.name, p, err)
		}
	}
}
