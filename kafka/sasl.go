package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/security/scram"
)

// SASL defaults, Kafka's where Kafka has the knob.
const (
	// DefaultSASLMaxReceiveSize is sasl.server.max.receive.size: the
	// largest frame before authentication and during a re-authentication.
	DefaultSASLMaxReceiveSize = DefaultMaxRequestBytesBeforeAuth
	// DefaultSASLFailedDelay is connection.failed.authentication.delay.ms:
	// a failed authentication is answered, and its connection closed, this
	// long after the failure, which slows a loop guessing passwords.
	DefaultSASLFailedDelay = 100 * time.Millisecond
	// DefaultSASLAuthDeadline bounds the time from accept to a completed
	// authentication. Kafka has no such knob (its idle timeout closes a
	// stalled exchange); a client authenticates within a few round trips.
	DefaultSASLAuthDeadline = 10 * time.Second
)

// SASL mechanism names, as clients send them in SaslHandshake.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// DefaultSASLMechanisms are the mechanisms of a SASL listener that names
// none. Kafka's default, GSSAPI, is not served; PLAIN, which sends the
// password itself, is enabled only when named, as Kafka requires.
var DefaultSASLMechanisms = []string{MechanismScramSHA512, MechanismScramSHA256}

// SASLConfig makes a listener authenticate its clients with SASL
// (SASL_PLAINTEXT and SASL_SSL listeners): a connection may send only
// ApiVersions, SaslHandshake and SaslAuthenticate until it authenticates.
// The zero value of a field selects its default.
type SASLConfig struct {
	// Mechanisms are sasl.enabled.mechanisms: any of PLAIN, SCRAM-SHA-256
	// and SCRAM-SHA-512 (DefaultSASLMechanisms when empty).
	Mechanisms []string
	// Authenticator returns what checks the credentials (required),
	// called at each SaslHandshake: ImageAuthenticator's, over the
	// metadata image. Its secret must be the same on every node and
	// across restarts, or an unknown user's fake salt tells it apart from
	// a known one. An error closes the connection (the client retries).
	Authenticator func() (*scram.Authenticator, error)
	// MaxReceiveSize is sasl.server.max.receive.size: the frame cap before
	// authentication and while re-authenticating, checked on the size
	// prefix before the frame is allocated.
	MaxReceiveSize int32
	// AuthDeadline closes a connection that has not authenticated this
	// long after accept.
	AuthDeadline time.Duration
	// FailedDelay is connection.failed.authentication.delay.ms: the wait
	// before a failed authentication is answered and its connection
	// closed. Negative answers at once (Kafka's 0).
	FailedDelay time.Duration
	// MaxReauth is connections.max.reauth.ms (KIP-368): when positive, a
	// session lives this long; SaslAuthenticate v1+ tells the client so,
	// and a connection that sends anything but a re-authentication past
	// it is closed. Zero: sessions do not expire.
	MaxReauth time.Duration

	// wait is the failed-authentication delay; tests replace it to see
	// the order of events without measuring time.
	wait func(ctx context.Context, d time.Duration) error
}

func (c *SASLConfig) withDefaults() (*SASLConfig, error) {
	if c == nil {
		return nil, nil
	}
	cfg := *c
	if len(cfg.Mechanisms) == 0 {
		cfg.Mechanisms = DefaultSASLMechanisms
	}
	cfg.Mechanisms = slices.Clone(cfg.Mechanisms)
	for _, m := range cfg.Mechanisms {
		switch m {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			return nil, fmt.Errorf("%w: SASL mechanism %q: served are %s, %s and %s",
				ErrBadConfig, m, MechanismPlain, MechanismScramSHA256, MechanismScramSHA512)
		}
	}
	if cfg.Authenticator == nil {
		return nil, fmt.Errorf("%w: SASL without an Authenticator", ErrBadConfig)
	}
	if cfg.MaxReceiveSize == 0 {
		cfg.MaxReceiveSize = DefaultSASLMaxReceiveSize
	}
	if cfg.AuthDeadline == 0 {
		cfg.AuthDeadline = DefaultSASLAuthDeadline
	}
	if cfg.FailedDelay == 0 {
		cfg.FailedDelay = DefaultSASLFailedDelay
	}
	if cfg.wait == nil {
		cfg.wait = sleepCtx
	}
	switch {
	case cfg.MaxReceiveSize < minFrameBytes:
		return nil, fmt.Errorf("%w: SASL MaxReceiveSize %d < %d", ErrBadConfig, cfg.MaxReceiveSize, minFrameBytes)
	case cfg.AuthDeadline < 0 || cfg.MaxReauth < 0:
		return nil, fmt.Errorf("%w: negative SASL deadline", ErrBadConfig)
	}
	return &cfg, nil
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *SASLConfig) enabled(mech string) bool { return slices.Contains(c.Mechanisms, mech) }

// saslStep is where a connection stands in the SASL exchange.
type saslStep uint8

const (
	// saslIdle: no exchange in progress (not begun on an unauthenticated
	// session, or done on an authenticated one).
	saslIdle saslStep = iota
	// saslExchanging: SaslHandshake chose a mechanism; SaslAuthenticate
	// messages carry its tokens.
	saslExchanging
)

// saslSession is the SASL part of a Session, owned like it by the reader.
type saslSession struct {
	step saslStep
	// mech is the mechanism of the exchange in progress or of the last
	// one that succeeded (a re-authentication must use the same).
	mech     string
	auth     *scram.Authenticator
	exchange *scram.Exchange
	// reauth: the exchange in progress re-authenticates an authenticated
	// session (KIP-368); only SaslAuthenticate may come until it ends.
	reauth bool
	// raw: SaslHandshake v0 chose the mechanism, so the frames that
	// follow until the exchange ends are bare SASL tokens, not requests.
	raw bool
	// expiry is when the session must have re-authenticated (zero: never).
	expiry time.Time
	// authentications counts the successful ones on this connection.
	authentications int
}

// SASLConfigFrom is the SASLConfig of a SASL_PLAINTEXT or SASL_SSL
// listener under cfg's settings (sasl.enabled.mechanisms,
// sasl.server.max.receive.size, connection.failed.authentication.delay.ms,
// connections.max.reauth.ms), checking credentials with auth.
func SASLConfigFrom(cfg *config.Config, auth func() (*scram.Authenticator, error)) *SASLConfig {
	delay := time.Duration(cfg.ConnectionFailedAuthenticationDelayMs) * time.Millisecond
	if delay == 0 {
		delay = -1 // Kafka's 0: no delay
	}
	return &SASLConfig{
		Mechanisms:     slices.Clone(cfg.SaslEnabledMechanisms),
		Authenticator:  auth,
		MaxReceiveSize: cfg.SaslServerMaxReceiveSize,
		FailedDelay:    delay,
		MaxReauth:      time.Duration(cfg.ConnectionsMaxReauthMs) * time.Millisecond,
	}
}

// ScramSecretPurpose names the key SCRAM's fake credentials of unknown
// users are made with, derived from the cluster secret:
// scram.Config.Secret is cluster.Image.DerivedSecret(ScramSecretPurpose).
const ScramSecretPurpose = "wren scram fake credentials"

// ImageAuthenticator is a SASLConfig.Authenticator over md's metadata
// image: credentials are looked up in the image current at each exchange
// (a user created or deleted counts from the next authentication), and
// unknown users' fake credentials are keyed by the cluster secret, which
// the image holds once the controller recorded it; until then it fails.
func ImageAuthenticator(md interface{ Image() *cluster.Image }) func() (*scram.Authenticator, error) {
	var built atomic.Pointer[scram.Authenticator]
	return func() (*scram.Authenticator, error) {
		if a := built.Load(); a != nil {
			return a, nil
		}
		secret := md.Image().DerivedSecret(ScramSecretPurpose)
		if secret == nil {
			return nil, errors.New("kafka: SASL: the metadata image holds no cluster secret yet")
		}
		a, err := scram.New(scram.Config{
			Lookup: func(m scram.Mechanism, user string) (scram.Credential, bool) {
				return md.Image().ScramCredential(m, user)
			},
			Secret: secret,
			// What kadm, `wren user create` and Kafka's tools use.
			FakeIterations: 8192,
		})
		if err != nil {
			return nil, err
		}
		built.Store(a)
		return a, nil
	}
}
