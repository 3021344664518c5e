package scram

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sasl"
	fscram "github.com/twmb/franz-go/pkg/sasl/scram"
)

// store is a map of credentials for tests.
type store map[Mechanism]map[string]Credential

func (s store) lookup(m Mechanism, user string) (Credential, bool) {
	c, ok := s[m][user]
	return c, ok
}

func (s store) add(t *testing.T, m Mechanism, user, password string, salt []byte, iterations int32) {
	t.Helper()
	c, err := m.NewCredential(password, salt, iterations)
	if err != nil {
		t.Fatal(err)
	}
	if s[m] == nil {
		s[m] = map[string]Credential{}
	}
	s[m][user] = c
}

var testSecret = bytes.Repeat([]byte{7}, 32)

func newAuth(t *testing.T, s store, nonces ...string) *Authenticator {
	t.Helper()
	cfg := Config{Lookup: s.lookup, Secret: testSecret, FakeIterations: 8192}
	if len(nonces) > 0 {
		cfg.NewNonce = func() (string, error) {
			n := nonces[0]
			if len(nonces) > 1 {
				nonces = nonces[1:]
			}
			return n, nil
		}
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestRFC7677Vector replays the SCRAM-SHA-256 exchange of RFC 7677,
// section 3, byte for byte: user "user", password "pencil".
func TestRFC7677Vector(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	s := store{}
	s.add(t, SHA256, "user", "pencil", salt, 4096)
	a := newAuth(t, s, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
	e, err := a.Start(SHA256)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct{ client, server string }{
		{"n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
			"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"},
		{"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
			"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
	}
	for i, st := range steps {
		out, err := e.Step([]byte(st.client))
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if string(out) != st.server {
			t.Fatalf("step %d: server said\n%s\nwant\n%s", i, out, st.server)
		}
	}
	if !e.Done() || e.User() != "user" {
		t.Fatalf("done=%t user=%q after the exchange", e.Done(), e.User())
	}
	if _, err := e.Step([]byte("c=biws")); err == nil {
		t.Fatal("a step after the exchange completed was taken")
	}
	if e.User() != "" {
		t.Fatalf("the user %q is still named after a failed step", e.User())
	}
}

// clientExchange runs franz-go's SCRAM client against e and returns the
// server's error.
func clientExchange(t *testing.T, m Mechanism, a *Authenticator, auth fscram.Auth) (*Exchange, error) {
	t.Helper()
	mech := map[Mechanism]sasl.Mechanism{SHA256: auth.AsSha256Mechanism(), SHA512: auth.AsSha512Mechanism()}[m]
	sess, msg, err := mech.Authenticate(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.Start(m)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		out, err := e.Step(msg)
		if err != nil {
			return e, err
		}
		done, next, err := sess.Challenge(out)
		if err != nil {
			t.Fatalf("the client refused the server's answer %q: %v", out, err)
		}
		if done {
			return e, nil
		}
		msg = next
	}
	t.Fatal("the exchange did not end in three steps")
	return nil, nil
}

// TestExchangeWithKafkaClient: franz-go's client authenticates with
// both mechanisms, with user names that need escapes and with an
// authorization id that names the user; it verifies the server's
// signature.
func TestExchangeWithKafkaClient(t *testing.T) {
	s := store{}
	for _, m := range Mechanisms {
		s.add(t, m, "alice", "secret-"+m.Name(), []byte("salt-of-alice-24-bytes!!"), 8192)
		s.add(t, m, "a,b=c", "pw", []byte("salt2"), 4096)
	}
	a := newAuth(t, s)
	for _, m := range Mechanisms {
		for _, auth := range []fscram.Auth{
			{User: "alice", Pass: "secret-" + m.Name()},
			{User: "alice", Pass: "secret-" + m.Name(), Zid: "alice"},
			{User: "a,b=c", Pass: "pw"},
		} {
			e, err := clientExchange(t, m, a, auth)
			if err != nil {
				t.Fatalf("%s %+v: %v", m, auth, err)
			}
			if !e.Done() || e.User() != auth.User {
				t.Fatalf("%s %+v: done=%t user=%q", m, auth, e.Done(), e.User())
			}
		}
		for _, auth := range []fscram.Auth{
			{User: "alice", Pass: "wrong"},
			{User: "alice", Pass: "secret-" + m.Name(), Zid: "admin"},
			{User: "mallory", Pass: "anything"},
		} {
			e, err := clientExchange(t, m, a, auth)
			if !errors.Is(err, ErrAuthFailed) || e.Done() {
				t.Fatalf("%s %+v: err %v done=%t, want %v", m, auth, err, e.Done(), ErrAuthFailed)
			}
		}
	}
}

// rfcClient computes a client's final message by RFC 5802, with the
// nonce and channel binding given.
func rfcClient(m Mechanism, password, clientFirstBare, serverFirst, channelBinding, nonce string) string {
	attrs := map[string]string{}
	for _, kv := range strings.Split(serverFirst, ",") {
		attrs[kv[:1]] = kv[2:]
	}
	salt, _ := base64.StdEncoding.DecodeString(attrs["s"])
	var iter int32
	for _, c := range attrs["i"] {
		iter = iter*10 + int32(c-'0')
	}
	sp, _ := m.SaltedPassword(password, salt, iter)
	clientKey := m.hmac(sp, []byte("Client Key"))
	storedKey := m.sum(clientKey)
	withoutProof := "c=" + channelBinding + ",r=" + nonce
	sig := m.hmac(storedKey, []byte(clientFirstBare+","+serverFirst+","+withoutProof))
	proof := make([]byte, len(sig))
	for i := range proof {
		proof[i] = clientKey[i] ^ sig[i]
	}
	return withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)
}

// TestNonceAndProofRefused: the final message's nonce must be exactly
// the server's (CVE-2024-56128), even with a proof computed correctly
// over the altered nonce; a final message replayed into another exchange
// fails; a proof from the wrong password, altered or of the wrong size
// fails; a channel binding that is not the first message's GS2 header
// fails.
func TestNonceAndProofRefused(t *testing.T) {
	const bare = "n=alice,r=clientnonce"
	for _, m := range Mechanisms {
		s := store{}
		s.add(t, m, "alice", "pw", []byte("0123456789abcdef"), 4096)
		a := newAuth(t, s, "SERVER1", "SERVER2")
		start := func() (*Exchange, string) {
			e, _ := a.Start(m)
			out, err := e.Step([]byte("n,," + bare))
			if err != nil {
				t.Fatal(err)
			}
			return e, string(out)
		}
		e1, sf1 := start()
		good1 := rfcClient(m, "pw", bare, sf1, "biws", "clientnonceSERVER1")
		// Each case runs in a new exchange whose server nonce is SERVER2;
		// final makes the client's message from its server-first.
		cases := []struct {
			name  string
			final func(sf string) string
			want  error
		}{
			{"client nonce only", func(sf string) string { return rfcClient(m, "pw", bare, sf, "biws", "clientnonce") }, ErrAuthFailed},
			{"server part altered", func(sf string) string { return rfcClient(m, "pw", bare, sf, "biws", "clientnonceSERVER9") }, ErrAuthFailed},
			{"client part altered", func(sf string) string { return rfcClient(m, "pw", bare, sf, "biws", "clientnoncXSERVER2") }, ErrAuthFailed},
			{"nonce extended", func(sf string) string { return rfcClient(m, "pw", bare, sf, "biws", "clientnonceSERVER2x") }, ErrAuthFailed},
			{"nonce truncated", func(sf string) string { return rfcClient(m, "pw", bare, sf, "biws", "clientnonceSERVER") }, ErrAuthFailed},
			{"replayed", func(string) string { return good1 }, ErrAuthFailed},
			{"wrong password", func(sf string) string { return rfcClient(m, "pw2", bare, sf, "biws", "clientnonceSERVER2") }, ErrAuthFailed},
			{"channel binding", func(sf string) string { return rfcClient(m, "pw", bare, sf, "eSws", "clientnonceSERVER2") }, ErrMalformed},
			{"short proof", func(string) string { return "c=biws,r=clientnonceSERVER2,p=AAAA" }, ErrAuthFailed},
			{"proof altered", func(sf string) string {
				f := rfcClient(m, "pw", bare, sf, "biws", "clientnonceSERVER2")
				return f[:len(f)-5] + "A" + f[len(f)-4:]
			}, ErrAuthFailed},
		}
		for _, c := range cases {
			e, sf := start()
			if sf != strings.Replace(sf1, "SERVER1", "SERVER2", 1) {
				t.Fatalf("%s: server-first %q", c.name, sf)
			}
			if _, err := e.Step([]byte(c.final(sf))); !errors.Is(err, c.want) {
				t.Errorf("%s %s: %v, want %v", m, c.name, err, c.want)
			}
			if e.Done() {
				t.Errorf("%s %s: authenticated", m, c.name)
			}
		}
		// The control: exchange 1 takes its own final message.
		if out, err := e1.Step([]byte(good1)); err != nil || !e1.Done() || !bytes.HasPrefix(out, []byte("v=")) {
			t.Errorf("%s: the good final message: %q %v", m, out, err)
		}
		// And a good final message for SERVER2 passes in a new exchange.
		e, sf := start()
		if _, err := e.Step([]byte(rfcClient(m, "pw", bare, sf, "biws", "clientnonceSERVER2"))); err != nil || !e.Done() {
			t.Errorf("%s: a good exchange with SERVER2: %v", m, err)
		}
	}
}

// TestUnknownUserIndistinguishable: an unknown user gets a server-first
// message of the same shape as a real user's (salt length, iterations),
// the same salt every time, and the same error at the proof as a wrong
// password.
func TestUnknownUserIndistinguishable(t *testing.T) {
	s := store{}
	s.add(t, SHA512, "alice", "pw", bytes.Repeat([]byte{1}, FakeSaltBytes), 8192)
	a := newAuth(t, s)
	first := func(user string) []string {
		e, _ := a.Start(SHA512)
		out, err := e.Step([]byte("n,,n=" + user + ",r=abc"))
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Split(string(out), ",")
		if len(f) != 3 || !strings.HasPrefix(f[0], "r=abc") {
			t.Fatalf("server-first %q", out)
		}
		final := rfcClient(SHA512, "guess", "n="+user+",r=abc", string(out), "biws", f[0][2:])
		_, err = e.Step([]byte(final))
		return []string{f[1], f[2], err.Error()}
	}
	real, ghost, ghostAgain, other := first("alice"), first("bob"), first("bob"), first("carol")
	salt := func(f []string) []byte { b, _ := base64.StdEncoding.DecodeString(f[0][2:]); return b }
	if len(salt(ghost)) != len(salt(real)) || ghost[1] != real[1] || ghost[2] != real[2] {
		t.Errorf("unknown user %v, real user %v: salt length, iterations or error differ", ghost, real)
	}
	if ghost[0] != ghostAgain[0] {
		t.Errorf("an unknown user's salt changed between exchanges: %s, %s", ghost[0], ghostAgain[0])
	}
	if ghost[0] == other[0] {
		t.Errorf("two unknown users got the same salt %s", ghost[0])
	}
}

// TestMalformedClientFirst: what the first message may not be.
func TestMalformedClientFirst(t *testing.T) {
	a := newAuth(t, store{})
	for _, msg := range []string{
		"", "n", "n,", "n,,", "n,,n=", "n,,n=u", "n,,r=abc", "n,,n=u,r=",
		"y,,n=u,r=abc", "p=tls-unique,,n=u,r=abc", "x,,n=u,r=abc",
		"n,b=u,n=u,r=abc", "n,a=,n=u,r=abc", "n,,m=ext,n=u,r=abc",
		"n,,n=u=2X,r=abc", "n,,n=u=,r=abc", "n,,n=u,r=a b", "n,,n=u,r=abc,e=1",
		"n,,n=u,r=abc,tokenauth=true", "n,,r=abc,n=u", "n,,n=\xff,r=abc", "n,,n=u\x00,r=abc",
	} {
		e, _ := a.Start(SHA256)
		if _, err := e.Step([]byte(msg)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want %v", msg, err, ErrMalformed)
		}
	}
	cf, err := parseClientFirst([]byte("n,a=a=2Cb,n=a=2Cb=3D,r=xyz"))
	if err != nil || cf.authzid != "a,b" || cf.user != "a,b=" || cf.gs2Header != "n,a=a=2Cb," || cf.bare != "n=a=2Cb=3D,r=xyz" {
		t.Errorf("escapes: %+v %v", cf, err)
	}
}

// TestMalformedClientFinal: what the final message may not be.
func TestMalformedClientFinal(t *testing.T) {
	for _, msg := range []string{
		"", "c=biws", "c=biws,r=abc", "c=biws,r=abc,p=", "c=biws,r=abc,p=!!!!",
		"r=abc,c=biws,p=AAAA", "c=bi,r=abc,p=AAAA", "c=biws,r=abc,x=1,p=AAAA",
		"c=biws,p=AAAA", "c=biws,r=,p=AAAA", "c=biws,r=abc,p=AAAA\x00",
	} {
		if _, err := parseClientFinal([]byte(msg)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want %v", msg, err, ErrMalformed)
		}
	}
}

// TestPlain: RFC 4616 messages against the SCRAM credentials.
func TestPlain(t *testing.T) {
	s := store{}
	s.add(t, SHA512, "alice", "pw512", []byte("salt"), 4096)
	s.add(t, SHA256, "bob", "pw256", []byte("salt"), 4096)
	a := newAuth(t, s)
	for _, c := range []struct {
		msg  string
		user string
		err  error
	}{
		{"\x00alice\x00pw512", "alice", nil},
		{"alice\x00alice\x00pw512", "alice", nil},
		{"\x00bob\x00pw256", "bob", nil},
		{"\x00alice\x00pw256", "", ErrAuthFailed},
		{"\x00carol\x00pw512", "", ErrAuthFailed},
		{"admin\x00alice\x00pw512", "", ErrAuthFailed},
		{"alice\x00pw512", "", ErrMalformed},
		{"\x00\x00pw", "", ErrMalformed},
		{"\x00alice\x00", "", ErrMalformed},
		{"\x00alice\x00pw\x00x", "", ErrMalformed},
		{"\x00al\xffice\x00pw", "", ErrMalformed},
	} {
		user, err := a.Plain([]byte(c.msg))
		if user != c.user || !errors.Is(err, c.err) {
			t.Errorf("%q: %q %v, want %q %v", c.msg, user, err, c.user, c.err)
		}
	}
}

// TestCredentialFromSalted: Kafka's iteration bounds and sizes; the
// credential equals the one derived from the password.
func TestCredentialFromSalted(t *testing.T) {
	for _, m := range Mechanisms {
		sp, _ := m.SaltedPassword("pw", []byte("salt"), 4096)
		c, err := m.CredentialFromSalted([]byte("salt"), sp, 4096)
		want, _ := m.NewCredential("pw", []byte("salt"), 4096)
		if err != nil || !bytes.Equal(c.StoredKey, want.StoredKey) || !bytes.Equal(c.ServerKey, want.ServerKey) || m.Check(c) != nil {
			t.Fatalf("%s: %+v %v", m, c, err)
		}
		for _, bad := range []struct {
			salt, sp []byte
			iter     int32
		}{
			{[]byte("salt"), sp, 4095}, {[]byte("salt"), sp, 16385}, {nil, sp, 4096}, {[]byte("salt"), sp[1:], 4096},
		} {
			if _, err := m.CredentialFromSalted(bad.salt, bad.sp, bad.iter); !errors.Is(err, ErrInvalidCredential) {
				t.Errorf("%s %d iterations, salt %d, salted %d bytes: %v", m, bad.iter, len(bad.salt), len(bad.sp), err)
			}
		}
	}
	if _, err := Mechanism(0).CredentialFromSalted([]byte("s"), make([]byte, 32), 4096); !errors.Is(err, ErrInvalidCredential) {
		t.Errorf("unknown mechanism: %v", err)
	}
	if m, ok := ParseMechanism("SCRAM-SHA-512"); !ok || m != SHA512 {
		t.Errorf("ParseMechanism: %v %v", m, ok)
	}
	if _, ok := ParseMechanism("PLAIN"); ok {
		t.Error("PLAIN parsed as a SCRAM mechanism")
	}
}

// TestNewRefusesWeakConfig: no lookup, a short secret, iterations out of
// bounds.
func TestNewRefusesWeakConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Secret: testSecret},
		{Lookup: store{}.lookup, Secret: testSecret[:31]},
		{Lookup: store{}.lookup, Secret: testSecret, FakeIterations: 100},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}
