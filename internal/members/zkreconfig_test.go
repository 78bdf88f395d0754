package members

import (
	"errors"
	"strings"
	"testing"
)

func TestParseZKServer(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Member
		err  string
	}{
		{in: "server.4=127.0.0.1:3004:3005:participant;127.0.0.1:2184",
			want: Member{ID: 4, Peer: "127.0.0.1:3004", Client: "127.0.0.1:2184"}},
		{in: "server.4=10.0.0.4:3004:3005;2184", want: Member{ID: 4, Peer: "10.0.0.4:3004", Client: "10.0.0.4:2184"}},
		{in: "server.4=10.0.0.4:3004:3005;0.0.0.0:2184", want: Member{ID: 4, Peer: "10.0.0.4:3004", Client: "10.0.0.4:2184"}},
		{in: "server.4=10.0.0.4:3004:3005:observer;2184", err: "participants"},
		{in: "server.4=10.0.0.4:3004;2184", err: "electionPort"},
		{in: "server.4=10.0.0.4:3004:3005", err: "no client port"},
		{in: "server.x=10.0.0.4:3004:3005;2184", err: "bad server id"},
		{in: "4=10.0.0.4:3004:3005;2184", err: "not a server"},
	} {
		got, err := ParseZKServer(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error with %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %+v, %v, want %+v", c.in, got, err, c.want)
		}
	}
}

func TestParseZKReconfig(t *testing.T) {
	cur := Static([]Member{{ID: 1, Peer: "h:1"}, {ID: 2, Peer: "h:2"}, {ID: 3, Peer: "h:3"}})
	ch, err := ParseZKReconfig(cur, "", "3", "")
	if err != nil || ch.Leave != 3 || ch.Join.ID != None {
		t.Errorf("remove 3: %+v, %v", ch, err)
	}
	ch, err = ParseZKReconfig(cur, "server.4=h:4:5:participant;h:6,giraffe.admin.4=h:7", "", "")
	if err != nil || ch.Join != (Member{ID: 4, Peer: "h:4", Client: "h:6", Admin: "h:7"}) || ch.Leave != None {
		t.Errorf("add 4: %+v, %v", ch, err)
	}
	for _, bad := range [][3]string{
		{"server.4=h:4:5;h:6", "3", ""},
		{"", "2,3", ""},
		{"", "", ""},
		{"server.4=h:4:5;h:6,server.5=h:8:9;h:10", "", ""},
	} {
		if _, err := ParseZKReconfig(cur, bad[0], bad[1], bad[2]); !errors.Is(err, ErrOneServer) {
			t.Errorf("%q: %v, want ErrOneServer", bad, err)
		}
	}
	if _, err := ParseZKReconfig(cur, "server.4=h:4:5;h:6,giraffe.admin.5=h:7", "", ""); err == nil {
		t.Error("an admin address of a server not joining was taken")
	}
	// Non-incremental: exactly one server added or removed.
	ch, err = ParseZKReconfig(cur, "", "", "server.1=h:1:1;h:11\nserver.2=h:2:2;h:12\nversion=100000000")
	if err != nil || ch.Leave != 3 {
		t.Errorf("members 1,2: %+v, %v", ch, err)
	}
	ch, err = ParseZKReconfig(cur, "", "", "server.1=h:1:1;h:11,server.2=h:2:2;h:12,server.3=h:3:3;h:13,server.4=h:4:4;h:14")
	if err != nil || ch.Join.ID != 4 {
		t.Errorf("members 1-4: %+v, %v", ch, err)
	}
	if _, err := ParseZKReconfig(cur, "", "", "server.1=h:1:1;h:11,server.4=h:4:4;h:14"); !errors.Is(err, ErrOneServer) {
		t.Errorf("a replacement: %v, want ErrOneServer", err)
	}
	if _, err := ParseZKReconfig(cur, "", "", "server.1=h:1:1;h:11,server.2=h:2:2;h:12,server.3=h:9:9;h:13"); !errors.Is(err, ErrOneServer) {
		t.Errorf("a moved server: %v, want ErrOneServer", err)
	}
}

// TestJoiningSpecParses: the reconfig -add string a joiner prints is one
// ParseZKServer reads back as the same member.
func TestJoiningSpecParses(t *testing.T) {
	x := Member{ID: 4, Peer: "127.0.0.1:2888", Client: "127.0.0.1:2181", Admin: "127.0.0.1:7001"}
	spec := x.JoiningSpec()
	if want := "server.4=127.0.0.1:2888:2888:participant;127.0.0.1:2181,giraffe.admin.4=127.0.0.1:7001"; spec != want {
		t.Fatalf("JoiningSpec = %q, want %q", spec, want)
	}
	server, _, _ := strings.Cut(spec, ",")
	got, err := ParseZKServer(server)
	if err != nil || got.ID != x.ID || got.Peer != x.Peer || got.Client != x.Client {
		t.Fatalf("ParseZKServer(%q) = %+v, %v", server, got, err)
	}
}
