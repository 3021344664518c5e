package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/scram"
)

// SaslHandshake: v0-1 (served from v1)
//
// Behavior:
// * On a listener without SASL: ILLEGAL_SASL_STATE, as Kafka's KafkaApis
//   answers; the connection stays open.
// * Chooses the mechanism of the exchange that SaslAuthenticate
//   requests then carry. SupportedMechanisms is always the listener's
//   sasl.enabled.mechanisms.
// * A mechanism not enabled: UNSUPPORTED_SASL_MECHANISM, then the
//   connection closes (after connection.failed.authentication.delay.ms).
// * A second handshake while an exchange is in progress:
//   ILLEGAL_SASL_STATE, then the connection closes.
// * On an authenticated connection it begins a re-authentication
//   (KIP-368), with the mechanism of the first authentication only
//   (Kafka's rule); until it ends only SaslAuthenticate may come, in
//   frames of at most sasl.server.max.receive.size.
// * Allowed before authentication.
//
// Not implemented:
// * v0, after which the SASL tokens travel as raw frames without
//   SaslAuthenticate (pre-1.0 clients): answered UNSUPPORTED_VERSION
//   with the mechanisms, then the connection closes. Clients that see v1
//   in ApiVersions use v1.

func (s *Server) handleSaslHandshake(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	cfg := s.cfg.SASL
	if cfg == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Respond(resp), nil
	}
	resp.SupportedMechanisms = cfg.Mechanisms
	sess := req.Session
	sa := &sess.sasl
	switch {
	case req.CompatOnly:
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		sess.closeAfter = fmt.Errorf("%w: SaslHandshake v0 (raw SASL tokens) is not served", ErrAuthenticationFailed)
		return Respond(resp), nil
	case sa.step != saslIdle:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return s.saslFailed(sess, resp, "SaslHandshake during an exchange")
	case !cfg.enabled(r.Mechanism):
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		return s.saslFailed(sess, resp, fmt.Sprintf("mechanism %q not enabled", r.Mechanism))
	case sess.authenticated && r.Mechanism != sa.mech:
		// Kafka: a re-authentication cannot change mechanisms.
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
		resp.SupportedMechanisms = []string{sa.mech}
		return s.saslFailed(sess, resp, fmt.Sprintf("re-authentication with %q after %q", r.Mechanism, sa.mech))
	}
	auth, err := cfg.Authenticator()
	if err != nil {
		return nil, err
	}
	sa.auth, sa.exchange = auth, nil
	if m, ok := scram.ParseMechanism(r.Mechanism); ok {
		ex, err := auth.Start(m)
		if err != nil {
			return nil, err
		}
		sa.exchange = ex
	}
	sa.step = saslExchanging
	sa.mech = r.Mechanism
	sa.reauth = sess.authenticated
	return Respond(resp), nil
}
