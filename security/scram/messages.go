package scram

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The client's messages, parsed by RFC 5802's grammar (section 7).

// clientFirst is a parsed client-first-message.
type clientFirst struct {
	// gs2Header is "n," [ "a=" saslname ] ",", as sent: the final
	// message's channel binding must be its base64.
	gs2Header string
	authzid   string // decoded; "" when absent
	user      string // decoded
	nonce     string
	// bare is client-first-message-bare, as sent, part of AuthMessage.
	bare string
}

// clientFinal is a parsed client-final-message.
type clientFinal struct {
	channelBinding []byte // decoded c=
	nonce          string
	proof          []byte // decoded p=
	// withoutProof is client-final-message-without-proof, as sent.
	withoutProof string
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// parseClientFirst parses gs2-header client-first-message-bare.
func parseClientFirst(msg []byte) (clientFirst, error) {
	var cf clientFirst
	if !utf8.Valid(msg) || bytes.IndexByte(msg, 0) >= 0 {
		return cf, malformed("the client's first message is not UTF-8 without NUL")
	}
	s := string(msg)
	flag, rest, ok := strings.Cut(s, ",")
	if !ok {
		return cf, malformed("the client's first message has no GS2 header")
	}
	switch flag {
	case "n":
	case "y", "p":
		return cf, malformed("channel binding is not supported (GS2 flag %q)", flag)
	default:
		if strings.HasPrefix(flag, "p=") {
			return cf, malformed("channel binding is not supported (GS2 flag %q)", flag)
		}
		return cf, malformed("GS2 flag %q is not n, y or p", flag)
	}
	authz, bare, ok := strings.Cut(rest, ",")
	if !ok {
		return cf, malformed("the GS2 header does not end with a comma")
	}
	if authz != "" {
		v, ok := strings.CutPrefix(authz, "a=")
		if !ok {
			return cf, malformed("the GS2 header's authorization id does not start with a=")
		}
		name, err := decodeSaslName(v)
		if err != nil {
			return cf, err
		}
		cf.authzid = name
	}
	cf.gs2Header = s[:len(s)-len(bare)]
	cf.bare = bare
	attrs := strings.Split(bare, ",")
	if strings.HasPrefix(attrs[0], "m=") {
		return cf, malformed("mandatory extension m= is not supported")
	}
	if len(attrs) < 2 {
		return cf, malformed("the client's first message needs n= and r=")
	}
	v, ok := strings.CutPrefix(attrs[0], "n=")
	if !ok {
		return cf, malformed("the client's first message does not start with n=")
	}
	user, err := decodeSaslName(v)
	if err != nil {
		return cf, err
	}
	cf.user = user
	if cf.nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok {
		return cf, malformed("the client's first message has no r= after n=")
	}
	if err := checkNonce(cf.nonce); err != nil {
		return cf, err
	}
	if len(attrs) > 2 {
		return cf, malformed("extensions are not supported (%d attributes after r=)", len(attrs)-2)
	}
	return cf, nil
}

// parseClientFinal parses channel-binding "," nonce "," proof: no
// extensions.
func parseClientFinal(msg []byte) (clientFinal, error) {
	var cf clientFinal
	if !utf8.Valid(msg) || bytes.IndexByte(msg, 0) >= 0 {
		return cf, malformed("the client's final message is not UTF-8 without NUL")
	}
	s := string(msg)
	i := strings.LastIndex(s, ",p=")
	if i < 0 {
		return cf, malformed("the client's final message has no proof")
	}
	cf.withoutProof = s[:i]
	proof := s[i+len(",p="):]
	attrs := strings.Split(cf.withoutProof, ",")
	if len(attrs) != 2 {
		return cf, malformed("the client's final message has %d attributes before p=, want c= and r=", len(attrs))
	}
	c, ok := strings.CutPrefix(attrs[0], "c=")
	if !ok {
		return cf, malformed("the client's final message does not start with c=")
	}
	var err error
	if cf.channelBinding, err = base64.StdEncoding.Strict().DecodeString(c); err != nil {
		return cf, malformed("channel binding c= is not base64")
	}
	if cf.nonce, ok = strings.CutPrefix(attrs[1], "r="); !ok {
		return cf, malformed("the client's final message has no r= after c=")
	}
	if err := checkNonce(cf.nonce); err != nil {
		return cf, err
	}
	if cf.proof, err = base64.StdEncoding.Strict().DecodeString(proof); err != nil || len(cf.proof) == 0 {
		return cf, malformed("proof p= is not base64")
	}
	return cf, nil
}

// decodeSaslName undoes =2C and =3D; any other '=' is malformed, and a
// name is never empty.
func decodeSaslName(s string) (string, error) {
	if s == "" {
		return "", malformed("an empty user name")
	}
	if !strings.Contains(s, "=") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", malformed("'=' in a user name is not =2C or =3D")
		}
		i += 2
	}
	return b.String(), nil
}

// encodeSaslName escapes ',' and '=' (the client's side, for tests).
func encodeSaslName(s string) string {
	return strings.NewReplacer("=", "=3D", ",", "=2C").Replace(s)
}

// checkNonce: printable ASCII but ',', not empty.
func checkNonce(n string) error {
	if n == "" {
		return malformed("an empty nonce")
	}
	for i := 0; i < len(n); i++ {
		if c := n[i]; c < 0x21 || c > 0x7e || c == ',' {
			return malformed("the nonce holds a byte that is not printable ASCII")
		}
	}
	return nil
}

// parsePlain parses RFC 4616's message = [authzid] NUL authcid NUL
// passwd: exactly two NULs, the user and password not empty, each part
// UTF-8.
func parsePlain(msg []byte) (authzid, user, password string, err error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", "", "", malformed("a PLAIN message has %d NUL separators, want 2", len(parts)-1)
	}
	for _, p := range parts {
		if !utf8.Valid(p) {
			return "", "", "", malformed("a PLAIN message is not UTF-8")
		}
	}
	if len(parts[1]) == 0 {
		return "", "", "", malformed("a PLAIN message with an empty user")
	}
	if len(parts[2]) == 0 {
		return "", "", "", malformed("a PLAIN message with an empty password")
	}
	return string(parts[0]), string(parts[1]), string(parts[2]), nil
}
