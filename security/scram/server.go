package scram

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
)

// FakeSaltBytes is the salt length of an unknown user's fake credential:
// what kadm's AlterUserSCRAMs (and so `wren user create`) generates.
const FakeSaltBytes = 24

// minSecretBytes is the least Config.Secret takes.
const minSecretBytes = 32

// Config is an Authenticator's configuration.
type Config struct {
	// Lookup returns user's credential for m, false when there is none.
	// It is called once per exchange, with the user the client named.
	Lookup func(m Mechanism, user string) (Credential, bool)
	// Secret keys the fake credentials of unknown users: at least 32
	// bytes, the same on every node of a cluster and across restarts (see
	// the package doc).
	Secret []byte
	// FakeIterations is the iteration count an unknown user's fake
	// credential shows (0: MinIterations); give the count real
	// credentials are made with, so that it tells nothing.
	FakeIterations int32
	// NewNonce returns the server's part of a nonce, printable ASCII
	// without ','; nil draws 18 random bytes in base64. Tests replay
	// RFC 7677's exchange with it.
	NewNonce func() (string, error)
}

// Authenticator starts SCRAM exchanges and checks PLAIN messages against
// one store of credentials.
type Authenticator struct {
	cfg Config
}

// New checks cfg and returns an Authenticator.
func New(cfg Config) (*Authenticator, error) {
	if cfg.Lookup == nil {
		return nil, errors.New("scram: no credential lookup")
	}
	if len(cfg.Secret) < minSecretBytes {
		return nil, fmt.Errorf("scram: a secret of %d bytes, want at least %d", len(cfg.Secret), minSecretBytes)
	}
	if cfg.FakeIterations == 0 {
		cfg.FakeIterations = MinIterations
	}
	if cfg.FakeIterations < MinIterations || cfg.FakeIterations > MaxIterations {
		return nil, fmt.Errorf("scram: fake iterations %d not within [%d, %d]", cfg.FakeIterations, MinIterations, MaxIterations)
	}
	if cfg.NewNonce == nil {
		cfg.NewNonce = randomNonce
	}
	return &Authenticator{cfg: cfg}, nil
}

func randomNonce() (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// credential is user's credential for m, or a fake one derived from the
// user name and the secret: known says which. The same work either way.
func (a *Authenticator) credential(m Mechanism, user string) (c Credential, known bool) {
	fake := a.fakeCredential(m, user)
	c, known = a.cfg.Lookup(m, user)
	if !known || m.Check(c) != nil {
		return fake, false
	}
	return c, true
}

// fakeCredential is deterministic in (m, user, secret): asking twice for
// an unknown user shows the same salt, as a real user's does.
func (a *Authenticator) fakeCredential(m Mechanism, user string) Credential {
	label := func(l string) []byte { return []byte("wren scram fake " + l + "\x00" + m.Name() + "\x00" + user) }
	salt := SHA512.hmac(a.cfg.Secret, label("salt"))[:FakeSaltBytes]
	return Credential{
		Salt:       salt,
		Iterations: a.cfg.FakeIterations,
		StoredKey:  m.hmac(a.cfg.Secret, label("stored key")),
		ServerKey:  m.hmac(a.cfg.Secret, label("server key")),
	}
}

// state of an Exchange.
type state int

const (
	awaitClientFirst state = iota
	awaitClientFinal
	done
	failed
)

// Exchange is one SCRAM authentication: feed the client's messages to
// Step in order. Not safe for concurrent use.
type Exchange struct {
	a     *Authenticator
	mech  Mechanism
	state state

	first       clientFirst
	serverFirst string
	nonce       string // client nonce + server nonce
	cred        Credential
	known       bool
}

// Start begins an exchange of mechanism m.
func (a *Authenticator) Start(m Mechanism) (*Exchange, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("scram: mechanism %d is not SCRAM-SHA-256 or SCRAM-SHA-512", m)
	}
	return &Exchange{a: a, mech: m}, nil
}

// Done reports whether the exchange authenticated the client.
func (e *Exchange) Done() bool { return e.state == done }

// User is the authenticated user once Done, else "".
func (e *Exchange) User() string {
	if e.state != done {
		return ""
	}
	return e.first.user
}

// Mechanism is the exchange's mechanism.
func (e *Exchange) Mechanism() Mechanism { return e.mech }

// Step takes the client's next message and returns the server's answer:
// server-first for client-first, server-final for client-final (and then
// Done). An error ends the exchange: the client is not authenticated,
// and every later Step fails.
func (e *Exchange) Step(msg []byte) ([]byte, error) {
	var out []byte
	var err error
	switch e.state {
	case awaitClientFirst:
		out, err = e.clientFirst(msg)
	case awaitClientFinal:
		out, err = e.clientFinal(msg)
	case done:
		err = errors.New("scram: the exchange is already complete")
	default:
		err = errors.New("scram: the exchange already failed")
	}
	if err != nil {
		e.state = failed
		e.cred = Credential{}
		return nil, err
	}
	return out, nil
}

func (e *Exchange) clientFirst(msg []byte) ([]byte, error) {
	cf, err := parseClientFirst(msg)
	if err != nil {
		return nil, err
	}
	if cf.authzid != "" && cf.authzid != cf.user {
		return nil, fmt.Errorf("%w: the authorization id is not the user", ErrAuthFailed)
	}
	sn, err := e.a.cfg.NewNonce()
	if err != nil {
		return nil, fmt.Errorf("scram: server nonce: %w", err)
	}
	if err := checkNonce(sn); err != nil {
		return nil, fmt.Errorf("scram: server nonce: %w", err)
	}
	e.first = cf
	e.cred, e.known = e.a.credential(e.mech, cf.user)
	e.nonce = cf.nonce + sn
	e.serverFirst = "r=" + e.nonce + ",s=" + base64.StdEncoding.EncodeToString(e.cred.Salt) +
		",i=" + strconv.Itoa(int(e.cred.Iterations))
	e.state = awaitClientFinal
	return []byte(e.serverFirst), nil
}

func (e *Exchange) clientFinal(msg []byte) ([]byte, error) {
	cf, err := parseClientFinal(msg)
	if err != nil {
		return nil, err
	}
	if string(cf.channelBinding) != e.first.gs2Header {
		return nil, malformed("channel binding c= is not the GS2 header of the first message")
	}
	// CVE-2024-56128: the nonce must be the one of server-first, the
	// client's and the server's parts both.
	if subtle.ConstantTimeCompare([]byte(cf.nonce), []byte(e.nonce)) != 1 {
		return nil, fmt.Errorf("%w: the final message's nonce is not the server's", ErrAuthFailed)
	}
	m := e.mech
	if len(cf.proof) != m.Size() {
		return nil, fmt.Errorf("%w: invalid credentials", ErrAuthFailed)
	}
	authMessage := []byte(e.first.bare + "," + e.serverFirst + "," + cf.withoutProof)
	clientSignature := m.hmac(e.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(cf.proof))
	for i := range clientKey {
		clientKey[i] = cf.proof[i] ^ clientSignature[i]
	}
	match := subtle.ConstantTimeCompare(m.sum(clientKey), e.cred.StoredKey)
	known := 0
	if e.known {
		known = 1
	}
	if match&known != 1 {
		return nil, fmt.Errorf("%w: invalid credentials", ErrAuthFailed)
	}
	serverSignature := m.hmac(e.cred.ServerKey, authMessage)
	e.state = done
	e.cred = Credential{}
	return []byte("v=" + base64.StdEncoding.EncodeToString(serverSignature)), nil
}

// Plain checks a SASL PLAIN message (RFC 4616) against the credentials
// and returns the authenticated user. The password is checked against
// the user's SCRAM-SHA-512 credential, else its SCRAM-SHA-256 one; an
// unknown user costs the same as a wrong password and fails the same way.
func (a *Authenticator) Plain(msg []byte) (string, error) {
	authzid, user, password, err := parsePlain(msg)
	if err != nil {
		return "", err
	}
	if authzid != "" && authzid != user {
		return "", fmt.Errorf("%w: the authorization id is not the user", ErrAuthFailed)
	}
	m := SHA512
	c, known := a.credential(SHA512, user)
	if !known {
		if c256, ok := a.cfg.Lookup(SHA256, user); ok && SHA256.Check(c256) == nil {
			m, c, known = SHA256, c256, true
		}
	}
	sp, err := m.SaltedPassword(password, c.Salt, c.Iterations)
	if err != nil {
		return "", fmt.Errorf("%w: invalid credentials", ErrAuthFailed)
	}
	stored := m.sum(m.hmac(sp, []byte("Client Key")))
	match := subtle.ConstantTimeCompare(stored, c.StoredKey)
	k := 0
	if known {
		k = 1
	}
	if match&k != 1 {
		return "", fmt.Errorf("%w: invalid credentials", ErrAuthFailed)
	}
	return user, nil
}
