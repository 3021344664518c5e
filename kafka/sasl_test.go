package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	kscram "github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/security/scram"
)

// testUsers are the credentials of the SASL tests' store: name to
// password, each with a SCRAM-SHA-256 and a SCRAM-SHA-512 credential.
var testUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret"}

// testAuthenticator checks against testUsers, stored as the metadata
// image stores them (salt, iterations, StoredKey, ServerKey).
func testAuthenticator(t testing.TB) func() (*scram.Authenticator, error) {
	t.Helper()
	type key struct {
		m    scram.Mechanism
		user string
	}
	creds := make(map[key]scram.Credential)
	for user, pass := range testUsers {
		for _, m := range scram.Mechanisms {
			c, err := m.NewCredential(pass, []byte("salt-of-"+user+"-"+m.Name()), scram.MinIterations)
			if err != nil {
				t.Fatal(err)
			}
			creds[key{m, user}] = c
		}
	}
	a, err := scram.New(scram.Config{
		Lookup: func(m scram.Mechanism, user string) (scram.Credential, bool) {
			c, ok := creds[key{m, user}]
			return c, ok
		},
		Secret: bytes.Repeat([]byte{7}, 32),
	})
	if err != nil {
		t.Fatal(err)
	}
	return func() (*scram.Authenticator, error) { return a, nil }
}

// saslRows are the production SASL rows, for test tables.
func saslRows() []apiEntry {
	var rows []apiEntry
	for _, e := range apiTable {
		if e.Key == kmsg.SASLHandshake || e.Key == kmsg.SASLAuthenticate {
			rows = append(rows, e)
		}
	}
	return rows
}

// saslServer serves ApiVersions, the SASL keys and a Metadata that sends
// the principal of each call to principals.
func saslServer(t testing.TB, cfg SASLConfig, observer ...Observer) (*testServer, chan string) {
	t.Helper()
	if cfg.Authenticator == nil {
		cfg.Authenticator = testAuthenticator(t)
	}
	principals := make(chan string, 64)
	table := testTable(append(saslRows(), metadataRow(func(s *Server, req *Request) (Pending, error) {
		select {
		case principals <- req.Session.Principal():
		default:
		}
		return Respond(metadataResponse(req)), nil
	}))...)
	sc := ServerConfig{SASL: &cfg, ListenerName: "SASL_PLAINTEXT"}
	if len(observer) > 0 {
		sc.Observer = observer[0]
	}
	return startServer(t, sc, table), principals
}

func saslClient(t testing.TB, addr string, m sasl.Mechanism) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.SASL(m), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func mechanism(name, user, pass string) sasl.Mechanism {
	switch name {
	case MechanismPlain:
		return plain.Auth{User: user, Pass: pass}.AsMechanism()
	case MechanismScramSHA256:
		return kscram.Auth{User: user, Pass: pass}.AsSha256Mechanism()
	default:
		return kscram.Auth{User: user, Pass: pass}.AsSha512Mechanism()
	}
}

var allMechanisms = []string{MechanismPlain, MechanismScramSHA256, MechanismScramSHA512}

// TestSASLMechanisms: franz-go authenticates with each mechanism, and the
// handlers see the principal.
func TestSASLMechanisms(t *testing.T) {
	ts, principals := saslServer(t, SASLConfig{Mechanisms: allMechanisms})
	for _, name := range allMechanisms {
		t.Run(name, func(t *testing.T) {
			cl := saslClient(t, ts.addr, mechanism(name, "alice", testUsers["alice"]))
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			if err := cl.Ping(ctx); err != nil {
				t.Fatalf("ping: %v", err)
			}
			if p := recv(t, principals, "metadata call"); p != "User:alice" {
				t.Fatalf("principal %q, want User:alice", p)
			}
		})
	}
}

// TestSASLRefusals: a wrong password and an unknown user get the same
// SASL_AUTHENTICATION_FAILED and message, with every mechanism; the
// connection closes after the answer.
func TestSASLRefusals(t *testing.T) {
	ts, _ := saslServer(t, SASLConfig{Mechanisms: allMechanisms, FailedDelay: -1})
	for _, name := range allMechanisms {
		t.Run(name, func(t *testing.T) {
			var msgs []string
			for _, who := range [][2]string{{"alice", "wrong"}, {"mallory", "wrong"}} {
				cl := saslClient(t, ts.addr, mechanism(name, who[0], who[1]))
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				err := cl.Ping(ctx)
				cancel()
				if !errors.Is(err, kerr.SaslAuthenticationFailed) {
					t.Fatalf("%s: ping: %v, want SASL_AUTHENTICATION_FAILED", who[0], err)
				}
				msgs = append(msgs, err.Error())
			}
			if msgs[0] != msgs[1] {
				t.Fatalf("a wrong password and an unknown user answered differently:\n%s\n%s", msgs[0], msgs[1])
			}
			if !strings.Contains(msgs[0], name) {
				t.Fatalf("message %q does not name the mechanism", msgs[0])
			}
		})
	}

	// The same on the wire, and the connection closes.
	var answers []*kmsg.SASLAuthenticateResponse
	for _, user := range []string{"alice", "mallory"} {
		c := dial(t, ts.addr)
		c.handshake(1, MechanismPlain)
		resp := c.authenticate(2, 2, []byte("\x00"+user+"\x00wrong"))
		answers = append(answers, resp)
		c.expectClosed()
	}
	if answers[0].ErrorCode != kerr.SaslAuthenticationFailed.Code || *answers[0].ErrorMessage != *answers[1].ErrorMessage ||
		answers[0].ErrorCode != answers[1].ErrorCode {
		t.Fatalf("answers %+v and %+v", answers[0], answers[1])
	}
	ts.logs.waitClosedWith(t, ErrAuthenticationFailed)
}

func (c *rawClient) handshake(corr int32, mech string) *kmsg.SASLHandshakeResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version = 1
	req.Mechanism = mech
	c.send(requestFrame(req, corr, "c"))
	_, resp := c.readResponse(kmsg.SASLHandshake, 1)
	return resp.(*kmsg.SASLHandshakeResponse)
}

func (c *rawClient) authenticate(corr int32, version int16, token []byte) *kmsg.SASLAuthenticateResponse {
	c.t.Helper()
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = version
	req.SASLAuthBytes = token
	c.send(requestFrame(req, corr, "c"))
	_, resp := c.readResponse(kmsg.SASLAuthenticate, version)
	return resp.(*kmsg.SASLAuthenticateResponse)
}

func plainToken(user, pass string) []byte { return []byte("\x00" + user + "\x00" + pass) }

// TestSASLOrder: before authentication only ApiVersions and the SASL keys
// pass; requests out of order get ILLEGAL_SASL_STATE or
// UNSUPPORTED_SASL_MECHANISM and a close.
func TestSASLOrder(t *testing.T) {
	ts, _ := saslServer(t, SASLConfig{Mechanisms: []string{MechanismScramSHA512, MechanismPlain}, FailedDelay: -1})

	t.Run("metadata before authentication", func(t *testing.T) {
		c := dial(t, ts.addr)
		c.apiVersions(1)
		c.handshake(2, MechanismPlain)
		c.send(requestFrame(metadataRequest(12), 3, "c"))
		if got := c.expectClosed(); len(got) != 0 {
			t.Fatalf("got %d bytes, want a close", len(got))
		}
		ts.logs.waitClosedWith(t, ErrNotAuthenticated)
	})
	t.Run("authenticate before handshake", func(t *testing.T) {
		c := dial(t, ts.addr)
		resp := c.authenticate(1, 2, plainToken("alice", testUsers["alice"]))
		if resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error code %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("second handshake", func(t *testing.T) {
		c := dial(t, ts.addr)
		c.handshake(1, MechanismPlain)
		if resp := c.handshake(2, MechanismPlain); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error code %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("mechanism not enabled", func(t *testing.T) {
		c := dial(t, ts.addr)
		resp := c.handshake(1, MechanismScramSHA256)
		if resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code ||
			!slices.Equal(resp.SupportedMechanisms, []string{MechanismScramSHA512, MechanismPlain}) {
			t.Fatalf("answer %+v, want UNSUPPORTED_SASL_MECHANISM with the enabled list", resp)
		}
		c.expectClosed()
	})
	t.Run("malformed SCRAM", func(t *testing.T) {
		c := dial(t, ts.addr)
		c.handshake(1, MechanismScramSHA512)
		if resp := c.authenticate(2, 2, []byte("not scram")); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("error code %d, want SASL_AUTHENTICATION_FAILED", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("no SASL on the listener", func(t *testing.T) {
		plainTS := startServer(t, ServerConfig{}, testTable(saslRows()...))
		c := dial(t, plainTS.addr)
		if resp := c.handshake(1, MechanismPlain); resp.ErrorCode != kerr.IllegalSaslState.Code {
			t.Fatalf("error code %d, want ILLEGAL_SASL_STATE", resp.ErrorCode)
		}
		c.apiVersions(2) // still open
	})
}

// TestSASLFrameLimit: a frame above sasl.server.max.receive.size before
// authentication closes the connection on its size prefix, before any of
// it is buffered; after authentication the listener's own cap applies.
func TestSASLFrameLimit(t *testing.T) {
	const limit = 4096
	ts, _ := saslServer(t, SASLConfig{Mechanisms: []string{MechanismPlain}, MaxReceiveSize: limit})
	c := dial(t, ts.addr)
	// A size prefix of 1 GiB, then nothing: the server must not wait for
	// the body nor allocate for it.
	c.send([]byte{0x40, 0, 0, 0}, []byte{0, byte(kmsg.SASLAuthenticate)})
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrFrameSize)
	c = dial(t, ts.addr)
	c.send([]byte{0, 0, 0x10, 0x01}, []byte{0, byte(kmsg.SASLAuthenticate)}) // limit + 1
	c.expectClosed()
	if _, peak, _ := ts.RequestMemory(); peak > limit {
		t.Fatalf("the request budget held %d bytes", peak)
	}

	c = dial(t, ts.addr)
	c.handshake(1, MechanismPlain)
	if resp := c.authenticate(2, 2, plainToken("bob", testUsers["bob"])); resp.ErrorCode != 0 {
		t.Fatalf("error code %d", resp.ErrorCode)
	}
	c.send(requestFrame(metadataRequest(12), 3, strings.Repeat("x", 2*limit)))
	c.readResponse(kmsg.Metadata, 12)
}

// TestSASLAuthDeadline: a connection that does not authenticate in time
// is closed.
func TestSASLAuthDeadline(t *testing.T) {
	ts, _ := saslServer(t, SASLConfig{AuthDeadline: 50 * time.Millisecond})
	c := dial(t, ts.addr)
	c.apiVersions(1)
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrAuthenticationTimeout)
}

// TestSASLFailedDelayOrder: a failed authentication is answered only after
// the delay, and the connection closes after the answer.
func TestSASLFailedDelayOrder(t *testing.T) {
	var mu sync.Mutex
	var events []string
	event := func(e string) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	ts, _ := saslServer(t, SASLConfig{
		Mechanisms: []string{MechanismPlain},
		wait: func(ctx context.Context, d time.Duration) error {
			if d != DefaultSASLFailedDelay {
				t.Errorf("delay %v, want the default %v", d, DefaultSASLFailedDelay)
			}
			event("delay started")
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return ctx.Err()
			}
			event("delay over")
			return nil
		},
	})
	c := dial(t, ts.addr)
	c.handshake(1, MechanismPlain)
	req := kmsg.NewPtrSASLAuthenticateRequest()
	req.Version = 2
	req.SASLAuthBytes = plainToken("alice", "wrong")
	c.send(requestFrame(req, 2, "c"))
	answered := make(chan []byte, 1)
	go func() {
		c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
		b, _ := io.ReadAll(c.nc) // the answer, then the close
		event("answer read")
		answered <- b
	}()
	recv(t, started, "delay start")
	event("released")
	close(release)
	b := recv(t, answered, "answer and close")
	if len(b) < 8 {
		t.Fatalf("read %d bytes, want the answer", len(b))
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"delay started", "released", "delay over", "answer read"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %q, want %q", events, want)
	}
}

// TestSASLReauthentication: with connections.max.reauth.ms, franz-go
// re-authenticates over its connection before the session expires and
// keeps working; a connection that lets it expire is closed at its next
// request; a re-authentication may not change the principal or the
// mechanism.
func TestSASLReauthentication(t *testing.T) {
	t.Run("franz-go", func(t *testing.T) {
		// franz-go re-authenticates a second (or 2-5%) before the
		// lifetime: with 1.1 s, after about 100 ms.
		ts, principals := saslServer(t, SASLConfig{MaxReauth: 1100 * time.Millisecond})
		cl := saslClient(t, ts.addr, mechanism(MechanismScramSHA512, "alice", testUsers["alice"]))
		reauthenticated := func(r logRecord) bool {
			n, _ := r.attrs["authentications"].(int64)
			return r.msg == "SASL authenticated" && n >= 2
		}
		deadline := time.Now().Add(waitTimeout)
		for ts.logs.count(reauthenticated) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no re-authentication within %v", waitTimeout)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			err := cl.Ping(ctx)
			cancel()
			if err != nil {
				t.Fatalf("ping: %v", err)
			}
			if p := recv(t, principals, "metadata call"); p != "User:alice" {
				t.Fatalf("principal %q", p)
			}
		}
		closed := func(r logRecord) bool { return r.msg == "closing connection" }
		if n := ts.logs.count(closed); n != 0 {
			t.Fatalf("%d connections closed", n)
		}
	})

	ts, _ := saslServer(t, SASLConfig{Mechanisms: allMechanisms, MaxReauth: time.Minute, FailedDelay: -1})
	login := func(user string) *rawClient {
		c := dial(t, ts.addr)
		c.handshake(1, MechanismPlain)
		resp := c.authenticate(2, 1, plainToken(user, testUsers[user]))
		if resp.ErrorCode != 0 || resp.SessionLifetimeMillis != time.Minute.Milliseconds() {
			t.Fatalf("answer %+v, want a session of a minute", resp)
		}
		return c
	}

	t.Run("expired", func(t *testing.T) {
		c := login("alice")
		c.send(requestFrame(metadataRequest(12), 3, "c"))
		c.readResponse(kmsg.Metadata, 12)
		// Re-authentication renews the session.
		c.handshake(4, MechanismPlain)
		if resp := c.authenticate(5, 1, plainToken("alice", testUsers["alice"])); resp.ErrorCode != 0 {
			t.Fatalf("re-authentication: error code %d", resp.ErrorCode)
		}
		ts.clockSkew.Add(int64(2 * time.Minute))
		defer ts.clockSkew.Store(0)
		c.send(requestFrame(metadataRequest(12), 6, "c"))
		c.expectClosed()
		ts.logs.waitClosedWith(t, ErrSessionExpired)
	})
	t.Run("other principal", func(t *testing.T) {
		c := login("alice")
		c.handshake(3, MechanismPlain)
		if resp := c.authenticate(4, 1, plainToken("bob", testUsers["bob"])); resp.ErrorCode != kerr.SaslAuthenticationFailed.Code {
			t.Fatalf("error code %d, want SASL_AUTHENTICATION_FAILED", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("other mechanism", func(t *testing.T) {
		c := login("alice")
		if resp := c.handshake(3, MechanismScramSHA256); resp.ErrorCode != kerr.UnsupportedSaslMechanism.Code {
			t.Fatalf("error code %d, want UNSUPPORTED_SASL_MECHANISM", resp.ErrorCode)
		}
		c.expectClosed()
	})
	t.Run("other request during re-authentication", func(t *testing.T) {
		c := login("alice")
		c.handshake(3, MechanismPlain)
		c.send(requestFrame(metadataRequest(12), 4, "c"))
		c.expectClosed()
	})
}

// TestSASLConfigFrom: the settings' defaults make Kafka's listener
// defaults, and a delay of 0 means none, as in Kafka.
func TestSASLConfigFrom(t *testing.T) {
	cfg := config.Default()
	auth := testAuthenticator(t)
	got, err := SASLConfigFrom(cfg, auth).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Mechanisms, DefaultSASLMechanisms) || got.MaxReceiveSize != DefaultSASLMaxReceiveSize ||
		got.FailedDelay != DefaultSASLFailedDelay || got.MaxReauth != 0 || got.Authenticator == nil {
		t.Fatalf("from the defaults: %+v", got)
	}
	cfg.ConnectionFailedAuthenticationDelayMs = 0
	cfg.ConnectionsMaxReauthMs = 60000
	cfg.SaslEnabledMechanisms = []string{MechanismPlain}
	got, err = SASLConfigFrom(cfg, auth).withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if got.FailedDelay >= 0 || got.MaxReauth != time.Minute || !slices.Equal(got.Mechanisms, []string{MechanismPlain}) {
		t.Fatalf("from the changed settings: %+v", got)
	}
}

// imageHolder is the metadata image a test changes while the server runs.
type imageHolder struct{ p atomic.Pointer[cluster.Image] }

func (h *imageHolder) Image() *cluster.Image { return h.p.Load() }

// TestSASLImageAuthenticator: credentials come from the metadata image
// current at each authentication, and nothing authenticates before the
// image holds the cluster secret.
func TestSASLImageAuthenticator(t *testing.T) {
	var md imageHolder
	im, err := cluster.ImageOf(cluster.Record{Kind: cluster.KindCluster, Cluster: &cluster.ClusterRecord{ClusterID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	md.p.Store(im)
	ts, principals := saslServer(t, SASLConfig{Authenticator: ImageAuthenticator(&md)})
	ping := func(user, pass string) error {
		cl := saslClient(t, ts.addr, mechanism(MechanismScramSHA512, user, pass))
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		return cl.Ping(ctx)
	}

	c := dial(t, ts.addr)
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Version, req.Mechanism = 1, MechanismScramSHA512
	c.send(requestFrame(req, 1, "c"))
	c.expectClosed()
	ts.logs.waitFor(t, "a close without the cluster secret", func(r logRecord) bool {
		return r.msg == "closing connection" && r.err() != nil && strings.Contains(r.err().Error(), "no cluster secret")
	})

	cred, err := scram.SHA512.NewCredential(testUsers["alice"], []byte("0123456789abcdef01234567"), 8192)
	if err != nil {
		t.Fatal(err)
	}
	im, err = im.With(
		cluster.Record{Kind: cluster.KindClusterSecret, ClusterSecret: &cluster.ClusterSecretRecord{Secret: bytes.Repeat([]byte{9}, cluster.ClusterSecretBytes)}},
		cluster.Record{Kind: cluster.KindScramCredential, ScramCredential: &cluster.ScramCredentialRecord{User: "alice", Mechanism: MechanismScramSHA512,
			Credential: &cluster.ScramCredential{Salt: cred.Salt, Iterations: cred.Iterations, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	md.p.Store(im)
	if err := ping("alice", testUsers["alice"]); err != nil {
		t.Fatalf("alice: %v", err)
	}
	if p := recv(t, principals, "metadata call"); p != "User:alice" {
		t.Fatalf("principal %q", p)
	}
	if err := ping("alice", "wrong"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("wrong password: %v", err)
	}

	im, err = im.With(cluster.Record{Kind: cluster.KindScramCredential, ScramCredential: &cluster.ScramCredentialRecord{User: "alice", Mechanism: MechanismScramSHA512}})
	if err != nil {
		t.Fatal(err)
	}
	md.p.Store(im)
	if err := ping("alice", testUsers["alice"]); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("after the credential's deletion: %v", err)
	}
}

// authEvents records what an AuthObserver is told.
type authEvents struct {
	nopObserver
	events chan string
}

func (o authEvents) SASLAuthentication(listener, mechanism string, ok, reauth bool) {
	o.events <- fmt.Sprintf("%s %s ok=%t reauth=%t", listener, mechanism, ok, reauth)
}

// TestSASLObserver: every authentication's outcome reaches an Observer
// that counts them, by listener and mechanism.
func TestSASLObserver(t *testing.T) {
	obs := authEvents{events: make(chan string, 16)}
	ts, _ := saslServer(t, SASLConfig{Mechanisms: []string{MechanismPlain}, FailedDelay: -1}, obs)
	c := dial(t, ts.addr)
	c.handshake(1, MechanismPlain)
	c.authenticate(2, 2, plainToken("alice", testUsers["alice"]))
	c.handshake(3, MechanismPlain)
	c.authenticate(4, 2, plainToken("alice", testUsers["alice"]))
	c = dial(t, ts.addr)
	c.handshake(1, MechanismPlain)
	c.authenticate(2, 2, plainToken("alice", "wrong"))
	c = dial(t, ts.addr)
	c.handshake(1, MechanismScramSHA256)
	for _, want := range []string{
		"SASL_PLAINTEXT PLAIN ok=true reauth=false",
		"SASL_PLAINTEXT PLAIN ok=true reauth=true",
		"SASL_PLAINTEXT PLAIN ok=false reauth=false",
		"SASL_PLAINTEXT  ok=false reauth=false",
	} {
		if got := recv(t, obs.events, want); got != want {
			t.Fatalf("observed %q, want %q", got, want)
		}
	}
}

// TestSASLHandshakeV0: after SaslHandshake v0 the SASL tokens travel as
// bare frames: franz-go takes that path against a broker whose
// ApiVersions stops SaslHandshake at v0, for each mechanism; a wrong
// password closes the connection without an answer; a raw exchange by
// hand ends in a connection that serves requests.
func TestSASLHandshakeV0(t *testing.T) {
	rows := saslRows()
	for i := range rows {
		if rows[i].Key == kmsg.SASLHandshake {
			rows[i].Max = 0
		}
	}
	principals := make(chan string, 16)
	table := testTable(append(rows, metadataRow(func(s *Server, req *Request) (Pending, error) {
		principals <- req.Session.Principal()
		return Respond(metadataResponse(req)), nil
	}))...)
	ts := startServer(t, ServerConfig{SASL: &SASLConfig{Mechanisms: allMechanisms, Authenticator: testAuthenticator(t), FailedDelay: -1}}, table)
	for _, name := range allMechanisms {
		cl := saslClient(t, ts.addr, mechanism(name, "bob", testUsers["bob"]))
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := cl.Ping(ctx)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := recv(t, principals, "metadata call"); p != "User:bob" {
			t.Fatalf("%s: principal %q", name, p)
		}
	}
	rawAuths := func(r logRecord) bool { return r.msg == "SASL authenticated" }
	if n := ts.logs.count(rawAuths); n != len(allMechanisms) {
		t.Fatalf("%d authentications", n)
	}

	handshakeV0 := func(c *rawClient, mech string) {
		req := kmsg.NewPtrSASLHandshakeRequest()
		req.Mechanism = mech
		c.send(requestFrame(req, 1, "c"))
		_, r := c.readResponse(kmsg.SASLHandshake, 0)
		if code := r.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
			t.Fatalf("handshake v0: error code %d", code)
		}
	}
	c := dial(t, ts.addr)
	handshakeV0(c, MechanismPlain)
	c.send(frame(plainToken("alice", "wrong")))
	if got := c.expectClosed(); len(got) != 0 {
		t.Fatalf("a failed raw authentication answered %q", got)
	}
	ts.logs.waitClosedWith(t, ErrAuthenticationFailed)

	c = dial(t, ts.addr)
	handshakeV0(c, MechanismPlain)
	c.send(frame(plainToken("alice", testUsers["alice"])))
	c.nc.SetReadDeadline(time.Now().Add(waitTimeout))
	var size [4]byte
	if _, err := io.ReadFull(c.nc, size[:]); err != nil || size != [4]byte{} {
		t.Fatalf("PLAIN's answer: %v %v, want an empty frame", size, err)
	}
	c.send(requestFrame(metadataRequest(12), 2, "c"))
	c.readResponse(kmsg.Metadata, 12)
	if p := recv(t, principals, "metadata call"); p != "User:alice" {
		t.Fatalf("principal %q", p)
	}
}
