package acl

import (
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/giraffe-coord/giraffe/zkproto"
)

// The x509 scheme: a client that presents a certificate the server trusts
// on its TLS port holds the id x509:<subject>, where the subject is
// written as ZooKeeper's X509AuthenticationProvider writes it, Java's
// X500Principal.getName() (RFC 2253). ACL entries x509:<subject> match it
// by string equality, so an entry must spell the subject exactly that way:
// most specific name first, no spaces after the commas.

// X509ID returns the id a client gains by presenting a certificate whose
// DER-encoded subject is rawSubject (x509.Certificate.RawSubject).
func X509ID(rawSubject []byte) (zkproto.Id, error) {
	name, err := SubjectName(rawSubject)
	if err != nil {
		return zkproto.Id{}, err
	}
	return zkproto.Id{Scheme: schemeX509, ID: name}, nil
}

// attributeTypeAndValue keeps the value's encoding: values whose type has
// no keyword are written as the hex of their DER bytes.
type attributeTypeAndValue struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// Names ending in SET are SET OF to encoding/asn1.
type (
	relativeNameSET []attributeTypeAndValue
	rdnSequence     []relativeNameSET
)

// rfc2253Keywords are the attribute types RFC 2253 names, the only ones
// Java writes by keyword; every other type is written as its dotted OID.
var rfc2253Keywords = map[string]string{
	"2.5.4.3":                    "CN",
	"2.5.4.6":                    "C",
	"2.5.4.7":                    "L",
	"2.5.4.8":                    "ST",
	"2.5.4.10":                   "O",
	"2.5.4.11":                   "OU",
	"2.5.4.9":                    "STREET",
	"0.9.2342.19200300.100.1.25": "DC",
	"0.9.2342.19200300.100.1.1":  "UID",
}

// ASN.1 universal tags of the string types Java writes as text.
const (
	tagUTF8String      = 12
	tagPrintableString = 19
	tagT61String       = 20
	tagIA5String       = 22
	tagGeneralString   = 27
	tagBMPString       = 30
)

// SubjectName writes a DER-encoded X.500 name as Java's
// X500Principal.getName() does (RFC 2253): relative names from the last
// to the first, separated by ","; the values of one relative name
// separated by "+"; types by their RFC 2253 keyword or dotted OID; the
// value of a keyword type written as text with ",=+<>#;\"\\" escaped by a
// backslash, NUL as \00, and leading and trailing spaces escaped; the
// value of an OID type, or a value that is not a string, as "#" and the
// hex of its DER encoding.
func SubjectName(der []byte) (string, error) {
	var seq rdnSequence
	rest, err := asn1.Unmarshal(der, &seq)
	if err != nil {
		return "", err
	}
	if len(rest) != 0 {
		return "", errors.New("x509: trailing data after the subject")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, atv := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := atv.Type.String()
			kw, ok := rfc2253Keywords[oid]
			text, isText := valueText(atv.Value)
			if !ok {
				kw = oid
			}
			b.WriteString(kw)
			b.WriteByte('=')
			if !ok || !isText {
				b.WriteByte('#')
				b.WriteString(hex.EncodeToString(atv.Value.FullBytes))
				continue
			}
			writeEscaped(&b, text)
		}
	}
	return b.String(), nil
}

// valueText decodes a string-typed attribute value as Java reads it.
func valueText(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case tagUTF8String, tagPrintableString, tagIA5String, tagGeneralString:
		return strings.ToValidUTF8(string(v.Bytes), string(utf8.RuneError)), true
	case tagT61String:
		// Java reads T61String as ISO-8859-1.
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case tagBMPString:
		if len(v.Bytes)%2 != 0 {
			return "", false
		}
		u := make([]uint16, len(v.Bytes)/2)
		for i := range u {
			u[i] = uint16(v.Bytes[2*i])<<8 | uint16(v.Bytes[2*i+1])
		}
		return string(utf16.Decode(u)), true
	}
	return "", false
}

// writeEscaped writes a value with Java's RFC 2253 escapes.
func writeEscaped(b *strings.Builder, s string) {
	lead := len(s) - len(strings.TrimLeft(s, " \r"))
	trail := len(strings.TrimRight(s, " \r"))
	for i, c := range s {
		switch {
		case i < lead || i >= trail:
			b.WriteByte('\\')
			b.WriteRune(c)
		case strings.ContainsRune(",=+<>#;\"\\", c):
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == 0:
			b.WriteString("\\00")
		default:
			b.WriteRune(c)
		}
	}
}

// validDN reports whether an ACL's x509 id reads as a distinguished name,
// as ZooKeeper checks it (by parsing it into an X500Principal): relative
// names separated by unescaped commas (or semicolons), each made of
// type=value pairs joined by "+", each type a keyword or a dotted OID.
// The empty name is valid.
func validDN(s string) bool {
	if strings.TrimSpace(s) == "" {
		return true
	}
	start, quoted := 0, false
	check := func(part string) bool {
		typ, _, ok := strings.Cut(part, "=")
		typ = strings.TrimSpace(typ)
		typ = strings.TrimPrefix(strings.TrimPrefix(typ, "OID."), "oid.")
		if !ok || typ == "" {
			return false
		}
		for _, c := range typ {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case !quoted && (c == ',' || c == ';' || c == '+'):
			if !check(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return !quoted && check(s[start:])
}
