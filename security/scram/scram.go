package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
)

// Mechanism is a SCRAM mechanism, numbered as Kafka's ScramMechanism
// (the type of KIP-554's messages): 0 is unknown.
type Mechanism int8

const (
	SHA256 Mechanism = 1
	SHA512 Mechanism = 2
)

// Mechanisms are the mechanisms served, in Kafka's type order.
var Mechanisms = []Mechanism{SHA256, SHA512}

// MinIterations and MaxIterations bound a credential's iteration count,
// as Kafka's ScramMechanism does for both mechanisms (RFC 7677 asks for
// at least 4096).
const (
	MinIterations = 4096
	MaxIterations = 16384
)

var (
	// ErrMalformed: a client message does not follow RFC 5802 (or RFC
	// 4616 for PLAIN), or asks for what is not served (channel binding,
	// extensions).
	ErrMalformed = errors.New("scram: malformed message")
	// ErrAuthFailed: the proof or password is wrong, the user unknown, or
	// the final message's nonce is not the server's.
	ErrAuthFailed = errors.New("scram: authentication failed")
	// ErrInvalidCredential: a credential or salted password that cannot
	// be one (its sizes, its iteration count).
	ErrInvalidCredential = errors.New("scram: invalid credential")
)

// ParseMechanism returns the mechanism of a SASL mechanism name
// ("SCRAM-SHA-256", "SCRAM-SHA-512").
func ParseMechanism(name string) (Mechanism, bool) {
	for _, m := range Mechanisms {
		if m.Name() == name {
			return m, true
		}
	}
	return 0, false
}

// Valid reports whether m is a mechanism served.
func (m Mechanism) Valid() bool { return m == SHA256 || m == SHA512 }

// Name is the SASL mechanism name, "UNKNOWN" for an invalid m.
func (m Mechanism) Name() string {
	switch m {
	case SHA256:
		return "SCRAM-SHA-256"
	case SHA512:
		return "SCRAM-SHA-512"
	}
	return "UNKNOWN"
}

func (m Mechanism) String() string { return m.Name() }

// Size is the hash's output size: the size of a salted password, of
// StoredKey, ServerKey and of a proof.
func (m Mechanism) Size() int {
	if m == SHA512 {
		return sha512.Size
	}
	return sha256.Size
}

func (m Mechanism) newHash() hash.Hash {
	if m == SHA512 {
		return sha512.New()
	}
	return sha256.New()
}

func (m Mechanism) hmac(key []byte, parts ...[]byte) []byte {
	h := hmac.New(m.newHash, key)
	for _, p := range parts {
		h.Write(p)
	}
	return h.Sum(nil)
}

func (m Mechanism) sum(b []byte) []byte {
	h := m.newHash()
	h.Write(b)
	return h.Sum(nil)
}

// Credential is what is stored for a user and a mechanism (Kafka's
// ScramCredential): never the password.
type Credential struct {
	Salt       []byte
	Iterations int32
	StoredKey  []byte
	ServerKey  []byte
}

// SaltedPassword is RFC 5802's Hi(password, salt, iterations): PBKDF2
// with HMAC of m's hash. Kafka normalizes no password (no SASLprep); nor
// does this.
func (m Mechanism) SaltedPassword(password string, salt []byte, iterations int32) ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("%w: mechanism %d", ErrInvalidCredential, m)
	}
	if iterations < 1 {
		return nil, fmt.Errorf("%w: %d iterations", ErrInvalidCredential, iterations)
	}
	return pbkdf2.Key(m.newHash, password, salt, int(iterations), m.Size())
}

// CredentialFromSalted derives the stored credential from a salted
// password, as AlterUserScramCredentials carries it. It checks the sizes
// and the iteration bounds.
func (m Mechanism) CredentialFromSalted(salt, saltedPassword []byte, iterations int32) (Credential, error) {
	switch {
	case !m.Valid():
		return Credential{}, fmt.Errorf("%w: mechanism %d", ErrInvalidCredential, m)
	case iterations < MinIterations:
		return Credential{}, fmt.Errorf("%w: too few iterations (%d, at least %d)", ErrInvalidCredential, iterations, MinIterations)
	case iterations > MaxIterations:
		return Credential{}, fmt.Errorf("%w: too many iterations (%d, at most %d)", ErrInvalidCredential, iterations, MaxIterations)
	case len(salt) == 0:
		return Credential{}, fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	case len(saltedPassword) != m.Size():
		return Credential{}, fmt.Errorf("%w: a %s salted password has %d bytes, not %d", ErrInvalidCredential, m, m.Size(), len(saltedPassword))
	}
	return m.credential(salt, saltedPassword, iterations), nil
}

func (m Mechanism) credential(salt, saltedPassword []byte, iterations int32) Credential {
	clientKey := m.hmac(saltedPassword, []byte("Client Key"))
	return Credential{
		Salt:       append([]byte(nil), salt...),
		Iterations: iterations,
		StoredKey:  m.sum(clientKey),
		ServerKey:  m.hmac(saltedPassword, []byte("Server Key")),
	}
}

// NewCredential derives the stored credential of a password.
func (m Mechanism) NewCredential(password string, salt []byte, iterations int32) (Credential, error) {
	sp, err := m.SaltedPassword(password, salt, iterations)
	if err != nil {
		return Credential{}, err
	}
	return m.CredentialFromSalted(salt, sp, iterations)
}

// Check reports whether c is a credential of m: sizes and iteration
// bounds as CredentialFromSalted makes them.
func (m Mechanism) Check(c Credential) error {
	switch {
	case !m.Valid():
		return fmt.Errorf("%w: mechanism %d", ErrInvalidCredential, m)
	case c.Iterations < MinIterations || c.Iterations > MaxIterations:
		return fmt.Errorf("%w: %d iterations, not within [%d, %d]", ErrInvalidCredential, c.Iterations, MinIterations, MaxIterations)
	case len(c.Salt) == 0:
		return fmt.Errorf("%w: empty salt", ErrInvalidCredential)
	case len(c.StoredKey) != m.Size() || len(c.ServerKey) != m.Size():
		return fmt.Errorf("%w: %s keys of %d and %d bytes, not %d", ErrInvalidCredential, m, len(c.StoredKey), len(c.ServerKey), m.Size())
	}
	return nil
}
