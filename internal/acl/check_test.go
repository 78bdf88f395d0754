package acl

import (
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

func TestCheck(t *testing.T) {
	pat := zkproto.Id{Scheme: "digest", ID: DigestID("pat", "pass")}
	pat2 := zkproto.Id{Scheme: "digest", ID: DigestID("pat", "pass2")}
	local := zkproto.Id{Scheme: "ip", ID: "127.0.0.1"}
	v6local := zkproto.Id{Scheme: "ip", ID: "0:0:0:0:0:0:0:1"}
	acl := func(perms int32, scheme, id string) zkproto.ACL {
		return zkproto.ACL{Perms: perms, ID: zkproto.Id{Scheme: scheme, ID: id}}
	}
	tests := []struct {
		name string
		list []zkproto.ACL
		perm int32
		ids  []zkproto.Id
		want bool
	}{
		{"nil ACL restricts nothing", nil, zkproto.PermAdmin, nil, true},
		{"empty ACL restricts nothing", []zkproto.ACL{}, zkproto.PermWrite, nil, true},
		{"open ACL", zkproto.OpenACLUnsafe, zkproto.PermDelete, nil, true},
		{"read-only ACL grants read", zkproto.ReadACLUnsafe, zkproto.PermRead, nil, true},
		{"read-only ACL denies write", zkproto.ReadACLUnsafe, zkproto.PermWrite, []zkproto.Id{local}, false},
		{"world with another id is no grant", []zkproto.ACL{acl(zkproto.PermAll, "world", "everyone")}, zkproto.PermRead, []zkproto.Id{{Scheme: "world", ID: "everyone"}}, false},
		{"digest match", []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}}, zkproto.PermRead, []zkproto.Id{local, pat}, true},
		{"digest wrong password", []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}}, zkproto.PermRead, []zkproto.Id{local, pat2}, false},
		{"digest id under another scheme", []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}}, zkproto.PermRead, []zkproto.Id{{Scheme: "ip", ID: pat.ID}}, false},
		{"perm bit not granted", []zkproto.ACL{{Perms: zkproto.PermRead | zkproto.PermWrite, ID: pat}}, zkproto.PermAdmin, []zkproto.Id{pat}, false},
		{"later entry grants", []zkproto.ACL{{Perms: zkproto.PermRead, ID: pat}, {Perms: zkproto.PermAdmin, ID: pat}}, zkproto.PermAdmin, []zkproto.Id{pat}, true},
		{"super passes a closed ACL", []zkproto.ACL{{Perms: zkproto.PermRead, ID: pat}}, zkproto.PermAdmin, []zkproto.Id{local, SuperID}, true},
		{"any super id passes", []zkproto.ACL{{Perms: 0, ID: pat}}, zkproto.PermRead, []zkproto.Id{{Scheme: "super", ID: "x"}}, true},
		{"super in an ACL grants nothing", []zkproto.ACL{{Perms: zkproto.PermAll, ID: SuperID}}, zkproto.PermRead, []zkproto.Id{pat}, false},
		{"ip exact", []zkproto.ACL{acl(zkproto.PermAll, "ip", "127.0.0.1")}, zkproto.PermWrite, []zkproto.Id{local}, true},
		{"ip prefix", []zkproto.ACL{acl(zkproto.PermAll, "ip", "127.0.0.1/16")}, zkproto.PermWrite, []zkproto.Id{{Scheme: "ip", ID: "127.0.200.9"}}, true},
		{"ip other net", []zkproto.ACL{acl(zkproto.PermAll, "ip", "192.168.0.2/16")}, zkproto.PermWrite, []zkproto.Id{local}, false},
		{"ip v6", []zkproto.ACL{acl(zkproto.PermAll, "ip", "::1/64")}, zkproto.PermWrite, []zkproto.Id{v6local}, true},
		{"ip v4 ACL, v6 client", []zkproto.ACL{acl(zkproto.PermAll, "ip", "0.0.0.1/16")}, zkproto.PermWrite, []zkproto.Id{v6local}, false},
		{"auth entry never matches", []zkproto.ACL{acl(zkproto.PermAll, "auth", "")}, zkproto.PermRead, []zkproto.Id{{Scheme: "auth", ID: ""}, pat}, false},
		{"unknown scheme never matches", []zkproto.ACL{acl(zkproto.PermAll, "sasl", "bob")}, zkproto.PermRead, []zkproto.Id{{Scheme: "sasl", ID: "bob"}}, false},
		{"x509 subject", []zkproto.ACL{acl(zkproto.PermAll, "x509", "CN=a,O=b")}, zkproto.PermRead, []zkproto.Id{local, {Scheme: "x509", ID: "CN=a,O=b"}}, true},
		{"x509 other subject", []zkproto.ACL{acl(zkproto.PermAll, "x509", "CN=a,O=b")}, zkproto.PermRead, []zkproto.Id{{Scheme: "x509", ID: "CN=a, O=b"}}, false},
		{"no ids", []zkproto.ACL{{Perms: zkproto.PermAll, ID: pat}}, zkproto.PermRead, nil, false},
		{"perm 0 asks for nothing an entry grants", zkproto.OpenACLUnsafe, 0, nil, false},
	}
	for _, tc := range tests {
		if got := Check(tc.list, tc.perm, tc.ids); got != tc.want {
			t.Errorf("%s: Check = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCheckDoesNotAllocate(t *testing.T) {
	list := []zkproto.ACL{
		{Perms: zkproto.PermRead, ID: zkproto.Id{Scheme: "digest", ID: DigestID("a", "b")}},
		{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "ip", ID: "2001:db8::/32"}},
	}
	ids := []zkproto.Id{{Scheme: "ip", ID: "2001:db8:0:0:0:0:0:1"}}
	allocs := testing.AllocsPerRun(100, func() {
		if !Check(list, zkproto.PermWrite, ids) {
			t.Fatal("expected a match")
		}
	})
	if allocs != 0 {
		t.Errorf("Check allocates %v times per call", allocs)
	}
}

func BenchmarkCheckIP(b *testing.B) {
	list := []zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "ip", ID: "10.0.0.0/8"}}}
	ids := []zkproto.Id{{Scheme: "ip", ID: "10.1.2.3"}}
	for b.Loop() {
		Check(list, zkproto.PermRead, ids)
	}
}
