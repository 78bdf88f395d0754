package acl

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"testing"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// TestSubjectNameAsJava checks SubjectName against the names Java 17's
// X500Principal.getName() gives the same subjects (read from certificates
// carrying them): the order of relative names, keywords and OIDs, hex for
// values without a keyword, multi-valued names, escapes, non-ASCII text.
func TestSubjectNameAsJava(t *testing.T) {
	oid := func(s ...int) asn1.ObjectIdentifier { return asn1.ObjectIdentifier(s) }
	atv := func(o asn1.ObjectIdentifier, v any) pkix.AttributeTypeAndValue {
		return pkix.AttributeTypeAndValue{Type: o, Value: v}
	}
	cn, o, ou := oid(2, 5, 4, 3), oid(2, 5, 4, 10), oid(2, 5, 4, 11)
	dc, uid := oid(0, 9, 2342, 19200300, 100, 1, 25), oid(0, 9, 2342, 19200300, 100, 1, 1)
	tests := []struct {
		name pkix.RDNSequence
		java string
	}{
		{pkix.RDNSequence{{atv(oid(2, 5, 4, 6), "FR")}, {atv(oid(2, 5, 4, 8), "IDF")}, {atv(oid(2, 5, 4, 7), "Paris")},
			{atv(o, "Giraffe")}, {atv(ou, "test")}, {atv(cn, "client")}},
			"CN=client,OU=test,O=Giraffe,L=Paris,ST=IDF,C=FR"},
		{pkix.RDNSequence{{atv(cn, "a,b+c=d<e>f#g;h\"i\\j")}}, `CN=a\,b\+c\=d\<e\>f\#g\;h\"i\\j`},
		{pkix.RDNSequence{{atv(cn, " lead")}, {atv(o, "trail ")}, {atv(ou, "#hash")}}, `OU=\#hash,O=trail\ ,CN=\ lead`},
		{pkix.RDNSequence{{atv(cn, "  two  ")}}, `CN=\ \ two\ \ `},
		{pkix.RDNSequence{{atv(oid(1, 2, 840, 113549, 1, 9, 1), "me@example.com")}, {atv(oid(2, 5, 4, 5), "1234")}, {atv(cn, "x")}},
			"CN=x,2.5.4.5=#130431323334,1.2.840.113549.1.9.1=#0c0e6d65406578616d706c652e636f6d"},
		{pkix.RDNSequence{{atv(dc, "com")}, {atv(dc, "example")}, {atv(uid, "jdoe")}}, "UID=jdoe,DC=example,DC=com"},
		{pkix.RDNSequence{{atv(o, "G"), atv(cn, "multi")}, {atv(oid(2, 5, 4, 9), "1 Main St")}}, "STREET=1 Main St,O=G+CN=multi"},
		{pkix.RDNSequence{{atv(cn, "Zoë 日本")}}, "CN=Zoë 日本"},
		{pkix.RDNSequence{}, ""},
	}
	for _, tc := range tests {
		der, err := asn1.Marshal(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := SubjectName(der)
		if err != nil || got != tc.java {
			t.Errorf("SubjectName(%v) = %q, %v; Java writes %q", tc.name, got, err, tc.java)
		}
		id, err := X509ID(der)
		if err != nil || id != (zkproto.Id{Scheme: "x509", ID: tc.java}) || !ValidID(id) {
			t.Errorf("X509ID(%v) = %v, %v (valid %v)", tc.name, id, err, ValidID(id))
		}
	}
	if _, err := SubjectName([]byte{0x30, 0x03, 0x31}); err == nil {
		t.Error("SubjectName accepted a truncated name")
	}
}

func TestValidDN(t *testing.T) {
	for _, dn := range []string{"", "CN=a", "CN=a,O=b", "CN=a, O=b", "O=G+CN=multi", `CN=a\,b`, `CN="a,b"`,
		"2.5.4.5=#130431323334", "OID.2.5.4.3=x", "CN=a;O=b"} {
		if !validDN(dn) {
			t.Errorf("validDN(%q) = false", dn)
		}
	}
	for _, dn := range []string{"bob", "CN=a,", "=a", "CN=a,bob", `CN="a`, "C N=a"} {
		if validDN(dn) {
			t.Errorf("validDN(%q) = true", dn)
		}
	}
}

// TestFixupX509 checks that an x509 id is an authenticated id: an "auth"
// entry expands to it, as ZooKeeper's X509AuthenticationProvider says
// isAuthenticated.
func TestFixupX509(t *testing.T) {
	me := zkproto.Id{Scheme: "x509", ID: "CN=client,O=Giraffe"}
	got, err := Fixup([]zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.AuthIDs}},
		[]zkproto.Id{{Scheme: "ip", ID: "127.0.0.1"}, me})
	if err != nil || len(got) != 1 || got[0].ID != me {
		t.Fatalf("Fixup(auth) = %v, %v; want the x509 id", got, err)
	}
	if _, err := Fixup([]zkproto.ACL{{Perms: zkproto.PermAll, ID: zkproto.Id{Scheme: "x509", ID: "bob"}}}, nil); err == nil {
		t.Fatal("Fixup accepted x509:bob, which is no distinguished name")
	}
}
