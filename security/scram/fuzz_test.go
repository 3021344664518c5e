package scram

import (
	"strings"
	"testing"
)

// FuzzParseClientFirst: a client's first message comes from the network.
// Any bytes parse or fail with ErrMalformed, never a panic; what parses
// names a user and a printable nonce, and its parts rebuild the message.
func FuzzParseClientFirst(f *testing.F) {
	for _, s := range []string{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO", "n,a=u,n=u,r=x", "n,,n=a=2Cb=3D,r=x", "y,,n=u,r=x", "n,,m=x,n=u,r=x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		cf, err := parseClientFirst(msg)
		if err != nil {
			return
		}
		if cf.user == "" || checkNonce(cf.nonce) != nil || cf.gs2Header+cf.bare != string(msg) {
			t.Fatalf("%q parsed as %+v", msg, cf)
		}
		if !strings.HasPrefix(cf.bare, "n="+encodeSaslName(cf.user)+",r=") {
			t.Fatalf("%q: user %q does not encode back", msg, cf.user)
		}
	})
}

// FuzzParseClientFinal: a client's final message comes from the network.
func FuzzParseClientFinal(f *testing.F) {
	for _, s := range []string{"c=biws,r=abc,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", "c=biws,r=a,b=c,p=AAAA", "c=,r=a,p=AA=="} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		cf, err := parseClientFinal(msg)
		if err != nil {
			return
		}
		if len(cf.proof) == 0 || checkNonce(cf.nonce) != nil || !strings.HasPrefix(string(msg), cf.withoutProof+",p=") {
			t.Fatalf("%q parsed as %+v", msg, cf)
		}
	})
}

// FuzzParsePlain: a PLAIN message comes from the network.
func FuzzParsePlain(f *testing.F) {
	for _, s := range []string{"\x00u\x00p", "u\x00u\x00p", "\x00\x00", "a\x00b"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		z, u, p, err := parsePlain(msg)
		if err != nil {
			return
		}
		if u == "" || p == "" || z+"\x00"+u+"\x00"+p != string(msg) {
			t.Fatalf("%q parsed as %q %q %q", msg, z, u, p)
		}
	})
}

// FuzzExchange: two client messages of any bytes, through the whole
// state machine, against a store with one user: never a panic, and never
// authenticated (no fuzzer finds a proof).
func FuzzExchange(f *testing.F) {
	f.Add([]byte("n,,n=user,r=abc"), []byte("c=biws,r=abcSERVER,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("n,,n=ghost,r=abc"), []byte("c=biws,r=abcSERVER,p=AAAA"))
	s := store{}
	cred, err := SHA256.NewCredential("pencil", []byte("salt"), 4096)
	if err != nil {
		f.Fatal(err)
	}
	s[SHA256] = map[string]Credential{"user": cred}
	a, err := New(Config{Lookup: s.lookup, Secret: testSecret, NewNonce: func() (string, error) { return "SERVER", nil }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, first, final []byte) {
		e, _ := a.Start(SHA256)
		if _, err := e.Step(first); err != nil {
			return
		}
		_, _ = e.Step(final)
		if e.Done() {
			t.Fatalf("authenticated by %q then %q", first, final)
		}
	})
}
