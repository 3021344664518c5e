package kafka

import (
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
)

// certPrincipal is the principal of a TLS session whose client gave cert
// and no SASL: "User:" and the subject's distinguished name in RFC 2253
// form, as Kafka's DefaultKafkaPrincipalBuilder makes it, passed through
// the listener's MapPrincipal when it has one.
func certPrincipal(cert *x509.Certificate, l *Listener) (string, error) {
	dn, err := rfc2253(cert.RawSubject)
	if err != nil {
		return "", err
	}
	if l != nil && l.MapPrincipal != nil {
		name, err := l.MapPrincipal(dn)
		if err != nil {
			return "", fmt.Errorf("mapping the subject %q to a principal: %w", dn, err)
		}
		if name == "" {
			return "", fmt.Errorf("the subject %q maps to an empty principal", dn)
		}
		dn = name
	}
	return "User:" + dn, nil
}

// rdnSET is one relative distinguished name: a SET of attributes (the
// type's name ending in SET tells encoding/asn1 so).
type rdnSET []dnAttribute

// dnAttribute keeps the value's encoding: a value that is not a string
// is written as its DER bytes in hex, as Java's X500Principal does.
type dnAttribute struct {
	Type  asn1.ObjectIdentifier
	Value asn1.RawValue
}

// rfc2253Keywords are the attribute names Java's X500Principal writes in
// RFC 2253 form; any other attribute is written as its dotted OID.
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

// rfc2253 formats a DER-encoded X.501 Name as Java's
// X500Principal.getName(X500Principal.RFC2253) does: the last RDN first,
// RDNs joined by ",", the attributes of one by "+", known attribute names
// as keywords, others as OIDs with "#" and the hex of their DER value.
func rfc2253(raw []byte) (string, error) {
	var seq []rdnSET
	rest, err := asn1.Unmarshal(raw, &seq)
	if err != nil {
		return "", fmt.Errorf("certificate subject: %w", err)
	}
	if len(rest) > 0 {
		return "", errors.New("certificate subject: trailing bytes")
	}
	var b strings.Builder
	for i := len(seq) - 1; i >= 0; i-- {
		if i != len(seq)-1 {
			b.WriteByte(',')
		}
		for j, a := range seq[i] {
			if j > 0 {
				b.WriteByte('+')
			}
			oid := a.Type.String()
			kw, known := rfc2253Keywords[oid]
			s, isString := dnString(a.Value)
			if !known {
				kw = oid
			}
			b.WriteString(kw)
			b.WriteByte('=')
			if !known || !isString {
				b.WriteByte('#')
				b.WriteString(hex.EncodeToString(a.Value.FullBytes))
				continue
			}
			escapeDNValue(&b, s)
		}
	}
	return b.String(), nil
}

// dnString is the text of a string-typed attribute value.
func dnString(v asn1.RawValue) (string, bool) {
	if v.Class != asn1.ClassUniversal {
		return "", false
	}
	switch v.Tag {
	case asn1.TagUTF8String, asn1.TagPrintableString, asn1.TagIA5String, asn1.TagNumericString:
		return string(v.Bytes), true
	case asn1.TagT61String:
		r := make([]rune, len(v.Bytes))
		for i, c := range v.Bytes {
			r[i] = rune(c)
		}
		return string(r), true
	case asn1.TagBMPString:
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

// escapeDNValue writes s escaped as Java's RFC 2253 form does: a
// backslash before , = + < > # ; " and \, before a leading or trailing
// space, and control characters as \hh.
func escapeDNValue(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case strings.IndexByte(`,=+<>#;"\`, c) >= 0,
			c == ' ' && (i == 0 || i == len(s)-1):
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(b, `\%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
}
