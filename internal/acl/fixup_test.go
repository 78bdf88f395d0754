package acl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestFixup(t *testing.T) {
	pat := zkproto.Id{Scheme: "digest", ID: DigestID("pat", "pass")}
	bob := zkproto.Id{Scheme: "digest", ID: DigestID("bob", "pw")}
	local := zkproto.Id{Scheme: "ip", ID: "127.0.0.1"}
	entry := func(perms int32, scheme, id string) zkproto.ACL {
		return zkproto.ACL{Perms: perms, ID: zkproto.Id{Scheme: scheme, ID: id}}
	}
	tests := []struct {
		name string
		list []zkproto.ACL
		ids  []zkproto.Id
		want []zkproto.ACL // nil means INVALIDACL
	}{
		{"nil list", nil, []zkproto.Id{pat}, nil},
		{"empty list", []zkproto.ACL{}, []zkproto.Id{pat}, nil},
		{"open", zkproto.OpenACLUnsafe, nil, zkproto.OpenACLUnsafe},
		{"world:anyone with odd perms kept", []zkproto.ACL{entry(0, "world", "anyone")}, nil, []zkproto.ACL{entry(0, "world", "anyone")}},
		{"perms beyond ALL kept", []zkproto.ACL{entry(0x7fffffff, "world", "anyone")}, nil, []zkproto.ACL{entry(0x7fffffff, "world", "anyone")}},
		{"world other id", []zkproto.ACL{entry(zkproto.PermAll, "world", "everyone")}, nil, nil},
		{"duplicates removed", []zkproto.ACL{zkproto.OpenACLUnsafe[0], zkproto.OpenACLUnsafe[0], entry(zkproto.PermRead, "world", "anyone")},
			nil, []zkproto.ACL{zkproto.OpenACLUnsafe[0], entry(zkproto.PermRead, "world", "anyone")}},
		{"creator all with digest", zkproto.CreatorAllACL, []zkproto.Id{local, pat}, []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}}},
		{"auth id text ignored", []zkproto.ACL{entry(zkproto.PermRead, "auth", "username1:password1")}, []zkproto.Id{pat}, []zkproto.ACL{{Perms: zkproto.PermRead, ID: pat}}},
		{"auth expands to every digest id in order", zkproto.CreatorAllACL, []zkproto.Id{bob, local, SuperID, pat},
			[]zkproto.ACL{{Perms: zkproto.PermAll, ID: bob}, {Perms: zkproto.PermAll, ID: pat}}},
		{"auth with ip only", zkproto.CreatorAllACL, []zkproto.Id{local}, nil},
		{"auth with super only", zkproto.CreatorAllACL, []zkproto.Id{local, SuperID}, nil},
		{"auth with nothing", zkproto.CreatorAllACL, nil, nil},
		{"auth among others", []zkproto.ACL{entry(zkproto.PermRead, "world", "anyone"), entry(zkproto.PermAll, "auth", "")}, []zkproto.Id{pat},
			[]zkproto.ACL{entry(zkproto.PermRead, "world", "anyone"), {Perms: zkproto.PermAll, ID: pat}}},
		{"expansion duplicates kept", []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}, entry(zkproto.PermAll, "auth", "")}, []zkproto.Id{pat},
			[]zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}, {Perms: zkproto.PermAll, ID: pat}}},
		{"two auth entries", []zkproto.ACL{entry(zkproto.PermRead, "auth", ""), entry(zkproto.PermWrite, "auth", "x")}, []zkproto.Id{pat},
			[]zkproto.ACL{{Perms: zkproto.PermRead, ID: pat}, {Perms: zkproto.PermWrite, ID: pat}}},
		{"digest kept", []zkproto.ACL{{Perms: zkproto.PermRead, ID: bob}}, nil, []zkproto.ACL{{Perms: zkproto.PermRead, ID: bob}}},
		{"digest malformed", []zkproto.ACL{entry(zkproto.PermRead, "digest", "bob")}, nil, nil},
		{"digest with password not hash is still well formed", []zkproto.ACL{entry(zkproto.PermRead, "digest", "bob:pw")}, nil, []zkproto.ACL{entry(zkproto.PermRead, "digest", "bob:pw")}},
		{"ip kept", []zkproto.ACL{entry(zkproto.PermAll, "ip", "10.0.0.0/8")}, nil, []zkproto.ACL{entry(zkproto.PermAll, "ip", "10.0.0.0/8")}},
		{"ip v6 mask too long", []zkproto.ACL{entry(zkproto.PermAll, "ip", "::1/256")}, nil, nil},
		{"ip v4 mask too long", []zkproto.ACL{entry(zkproto.PermAll, "ip", "127.0.0.1/64")}, nil, nil},
		{"ip hostname", []zkproto.ACL{entry(zkproto.PermAll, "ip", "localhost")}, nil, nil},
		{"super scheme", []zkproto.ACL{{Perms: zkproto.PermAll, ID: SuperID}}, []zkproto.Id{SuperID}, nil},
		{"unknown scheme", []zkproto.ACL{entry(zkproto.PermAll, "sasl", "bob")}, nil, nil},
		{"empty scheme", []zkproto.ACL{entry(zkproto.PermAll, "", "")}, nil, nil},
		{"one bad entry spoils the list", []zkproto.ACL{zkproto.OpenACLUnsafe[0], entry(zkproto.PermAll, "ip", "1.2.3")}, nil, nil},
	}
	for _, tc := range tests {
		got, err := Fixup(tc.list, tc.ids)
		if tc.want == nil {
			if !errors.Is(err, zkproto.ErrInvalidACL) || got != nil {
				t.Errorf("%s: Fixup = %v, %v; want INVALIDACL", tc.name, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: Fixup = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}

func TestFixupDoesNotAlias(t *testing.T) {
	in := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.AnyoneID}}
	out, err := Fixup(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	out[0].Perms = 0
	if in[0].Perms != zkproto.PermAll {
		t.Fatal("Fixup's result aliases its input")
	}
}

// TestFixupProperties runs Fixup on random lists and checks what must hold of
// every answer: a valid list contains only world:anyone and valid provider
// entries, in input order, without duplicates among the kept input entries;
// the long-list (map) dedup path agrees with the pairwise one.
func TestFixupProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	ids := []zkproto.Id{
		zkproto.AnyoneID, {Scheme: "world", ID: "x"}, zkproto.AuthIDs,
		{Scheme: "digest", ID: DigestID("a", "b")}, {Scheme: "digest", ID: "nocolon"},
		{Scheme: "ip", ID: "10.0.0.0/8"}, {Scheme: "ip", ID: "::1"}, {Scheme: "ip", ID: "1.2.3"},
		SuperID, {Scheme: "x509", ID: "CN=a"},
	}
	auth := [][]zkproto.Id{nil, {{Scheme: "ip", ID: "127.0.0.1"}}, {{Scheme: "digest", ID: DigestID("u", "p")}, SuperID}}
	for i := 0; i < 5000; i++ {
		n := rng.IntN(40)
		list := make([]zkproto.ACL, n)
		for j := range list {
			list[j] = zkproto.ACL{Perms: int32(rng.IntN(3)), ID: ids[rng.IntN(len(ids))]}
		}
		caller := auth[rng.IntN(len(auth))]
		got, err := Fixup(list, caller)
		wantErr := n == 0
		for _, a := range list {
			if !ValidID(a.ID) || (a.ID == zkproto.AuthIDs && len(caller) < 2) {
				wantErr = true
			}
		}
		if wantErr != (err != nil) {
			t.Fatalf("Fixup(%v, %v) error = %v, want error: %v", list, caller, err, wantErr)
		}
		if err != nil {
			continue
		}
		for _, a := range got {
			if a.ID.Scheme == "auth" || !ValidID(a.ID) {
				t.Fatalf("Fixup(%v) kept %v", list, a)
			}
		}
		if ref := dedupPairwise(list); !slices.Equal(dedup(list), ref) {
			t.Fatalf("dedup(%v) = %v, want %v", list, dedup(list), ref)
		}
	}
}

func dedupPairwise(list []zkproto.ACL) []zkproto.ACL {
	var out []zkproto.ACL
	for _, a := range list {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

func TestValidID(t *testing.T) {
	tests := []struct {
		id   zkproto.Id
		want bool
	}{
		{zkproto.AnyoneID, true},
		{zkproto.Id{Scheme: "world", ID: "Anyone"}, false},
		{zkproto.AuthIDs, true},
		{zkproto.Id{Scheme: "auth", ID: "whatever"}, true},
		{zkproto.Id{Scheme: "digest", ID: DigestID("u", "p")}, true},
		{zkproto.Id{Scheme: "digest", ID: "u"}, false},
		{zkproto.Id{Scheme: "ip", ID: "10.0.0.1"}, true},
		{zkproto.Id{Scheme: "ip", ID: "2001:db8::/32"}, true},
		{zkproto.Id{Scheme: "ip", ID: "10.0.0.1/40"}, false},
		{SuperID, false},
		{zkproto.Id{Scheme: "Digest", ID: DigestID("u", "p")}, false},
		{zkproto.Id{}, false},
	}
	for _, tc := range tests {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%v) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

func BenchmarkFixupOpen(b *testing.B) {
	for b.Loop() {
		if _, err := Fixup(zkproto.OpenACLUnsafe, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFixupLongList(b *testing.B) {
	list := make([]zkproto.ACL, 5000)
	for i := range list {
		list[i] = zkproto.ACL{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "ip", ID: fmt.Sprintf("10.%d.%d.1", i/256%256, i%256)}}
	}
	for b.Loop() {
		if _, err := Fixup(list, nil); err != nil {
			b.Fatal(err)
		}
	}
}
