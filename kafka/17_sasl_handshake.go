package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/scram"
)

// SaslHandshake: v0-1
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
// * v0 (clients before Kafka 1.0's KIP-152, kafka-python 2.0): the frames
//   that follow are the bare SASL tokens, each answered with a bare frame
//   holding the server's token (PLAIN's is empty), until the exchange
//   ends; then requests follow. A failure there is answered with nothing:
//   the connection closes after the failed-authentication delay, as
//   Kafka's does.
// * On an authenticated connection v1 begins a re-authentication
//   (KIP-368), with the mechanism of the first authentication only
//   (Kafka's rule); until it ends only SaslAuthenticate may come, in
//   frames of at most sasl.server.max.receive.size. v0 cannot
//   re-authenticate: ILLEGAL_SASL_STATE, then the connection closes.
// * Allowed before authentication.
// * Authorization: none: it comes before authentication.

func (s *Server) handleSaslHandshake(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	cfg := req.Session.saslConfig
	if cfg == nil {
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return Respond(resp), nil
	}
	resp.SupportedMechanisms = cfg.Mechanisms
	sess := req.Session
	sa := &sess.sasl
	switch {
	case r.Version == 0 && sess.authenticated:
		// Re-authentication needs SaslAuthenticate (KIP-368).
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return s.saslFailed(sess, resp, "re-authentication with SaslHandshake v0")
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
	sa.raw = r.Version == 0
	return Respond(resp), nil
}
