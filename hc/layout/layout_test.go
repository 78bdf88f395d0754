package layout

import (
	"errors"
	"testing"
)

func TestEncodeDecode(t *testing.T) {
	for _, p := range []string{"/a", "/a/b/c", "/100%", "/a%2Fb/c", "/x%25/%/y", "/é/ü"} {
		enc := Encode(p)
		for _, c := range enc {
			if c == '/' {
				t.Fatalf("Encode(%q) = %q has a '/'", p, enc)
			}
		}
		got, err := Decode(enc)
		if err != nil || got != p {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", p, got, err)
		}
	}
	if Encode("/a/b") == Encode("/a%2Fb") {
		t.Fatal("two paths encode alike")
	}
	for _, bad := range []string{"a%", "a%2", "a%41"} {
		if _, err := Decode(bad); !errors.Is(err, ErrBadPath) {
			t.Fatalf("Decode(%q) = %v, want ErrBadPath", bad, err)
		}
	}
}

func FuzzEncodeDecode(f *testing.F) {
	for _, s := range []string{"/a", "/a/b", "/%/%25/%2F"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if CheckPath(p) != nil {
			return
		}
		got, err := Decode(Encode(p))
		if err != nil || got != p {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", p, got, err)
		}
	})
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"/a", "/a/b", "/a b/c-d_e.f", "/%"} {
		if err := CheckPath(ok); err != nil {
			t.Errorf("CheckPath(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/", "a", "/a/", "//a", "/a/./b", "/a/..", "/a\x00"} {
		if err := CheckPath(bad); !errors.Is(err, ErrBadPath) {
			t.Errorf("CheckPath(%q) = %v, want ErrBadPath", bad, err)
		}
	}
}

func TestDomainAndPaths(t *testing.T) {
	cases := []struct{ p, domain string }{{"/a", "/"}, {"/a/b", "/a"}, {"/a/b/c", "/a/b"}}
	for _, c := range cases {
		if d := Domain(c.p); d != c.domain {
			t.Errorf("Domain(%q) = %q, want %q", c.p, d, c.domain)
		}
	}
	if NamePath("/") != NamesRoot || NamePath("/a/b") != "/hc/ns/a/b" {
		t.Fatal("NamePath")
	}
	if WorkerLockPath("/a/b") != "/hc/locks/a%2Fb" || HolderPath("/a/b", 7) != "/hc/locks/a%2Fb/h-7" {
		t.Fatal("worker paths")
	}
}

func TestCheckClusterID(t *testing.T) {
	for _, ok := range []string{"w1", "worker-2", "a.b_c"} {
		if err := CheckClusterID(ok); err != nil {
			t.Errorf("CheckClusterID(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-w", "a:b", "a/b", "a b"} {
		if err := CheckClusterID(bad); err == nil {
			t.Errorf("CheckClusterID(%q) accepted", bad)
		}
	}
}

func TestPhases(t *testing.T) {
	for _, p := range Phases {
		got, err := ParsePhase(string(p))
		if err != nil || got != p {
			t.Fatalf("ParsePhase(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := ParsePhase("nope"); err == nil {
		t.Fatal("ParsePhase accepted an unknown phase")
	}
}
