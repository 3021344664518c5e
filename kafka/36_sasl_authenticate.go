package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/security/scram"
)

// SaslAuthenticate: v0-2
//
// Behavior:
// * Carries the tokens of the mechanism SaslHandshake chose: PLAIN in one
//   message; SCRAM-SHA-256 and SCRAM-SHA-512 in two (client-first, then
//   client-final), each answered with the server's message.
// * Success authenticates the connection as User:<name> (Session.Principal,
//   for the authorizer). v1+: SessionLifetimeMillis is
//   connections.max.reauth.ms when positive (KIP-368); the client must
//   re-authenticate before it passes, or its next request closes the
//   connection.
// * A re-authentication must end with the same principal, else it fails.
// * Failure (a wrong password, an unknown user, a malformed token):
//   SASL_AUTHENTICATION_FAILED with one generic message naming the
//   mechanism, the same whatever failed, so that users cannot be told
//   apart; answered after connection.failed.authentication.delay.ms,
//   then the connection closes.
// * Before a SaslHandshake on a SASL listener: ILLEGAL_SASL_STATE, then
//   the connection closes. On an authenticated connection that is not
//   re-authenticating, or on a listener without SASL: ILLEGAL_SASL_STATE,
//   and the connection stays open (Kafka's KafkaApis).
// * Allowed before authentication.

// saslFailureMessage is the one message of a failed authentication.
func saslFailureMessage(mech string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

func (s *Server) handleSaslAuthenticate(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	cfg := s.cfg.SASL
	sess := req.Session
	sa := &sess.sasl
	switch {
	case cfg == nil || (sess.authenticated && sa.step == saslIdle):
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate request received after successful authentication"
		resp.ErrorMessage = &msg
		return Respond(resp), nil
	case sa.step != saslExchanging:
		resp.ErrorCode = kerr.IllegalSaslState.Code
		msg := "SaslAuthenticate before SaslHandshake"
		resp.ErrorMessage = &msg
		return s.saslFailed(sess, resp, msg)
	}

	var user string
	var err error
	if sa.exchange != nil {
		var out []byte
		out, err = sa.exchange.Step(r.SASLAuthBytes)
		if err == nil && !sa.exchange.Done() {
			resp.SASLAuthBytes = out
			return Respond(resp), nil
		}
		resp.SASLAuthBytes = out
		user = sa.exchange.User()
	} else {
		user, err = sa.auth.Plain(r.SASLAuthBytes)
	}
	principal := "User:" + user
	if err == nil && sa.reauth && principal != sess.principal {
		err = fmt.Errorf("%w: re-authentication as %s changes the principal %s", scram.ErrAuthFailed, principal, sess.principal)
	}
	if err != nil {
		resp.SASLAuthBytes = nil
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := saslFailureMessage(sa.mech)
		resp.ErrorMessage = &msg
		reason := "invalid credentials"
		if errors.Is(err, scram.ErrMalformed) {
			reason = "malformed token"
		}
		return s.saslFailed(sess, resp, sa.mech+": "+reason)
	}

	reauth := sa.reauth
	sess.Authenticate(principal)
	sa.step, sa.auth, sa.exchange, sa.reauth = saslIdle, nil, nil, false
	s.observeAuth(sess, sa.mech, true, reauth)
	sa.authentications++
	sa.expiry = time.Time{}
	if cfg.MaxReauth > 0 {
		sa.expiry = s.now().Add(cfg.MaxReauth)
		resp.SessionLifetimeMillis = cfg.MaxReauth.Milliseconds()
	}
	s.log.Debug("SASL authenticated", "remote", sess.RemoteAddr, "principal", principal,
		"mechanism", sa.mech, "authentications", sa.authentications)
	return Respond(resp), nil
}

// saslFailed ends the exchange: resp is sent after the failed-authentication
// delay and the connection closes after it. reason is logged, never sent.
func (s *Server) saslFailed(sess *Session, resp kmsg.Response, reason string) (Pending, error) {
	mech := ""
	if sess.sasl.step == saslExchanging {
		mech = sess.sasl.mech
	}
	s.observeAuth(sess, mech, false, sess.sasl.reauth)
	sess.sasl.step, sess.sasl.auth, sess.sasl.exchange = saslIdle, nil, nil
	sess.closeAfter = fmt.Errorf("%w: %s", ErrAuthenticationFailed, reason)
	cfg := s.cfg.SASL
	return func(ctx context.Context) (Response, error) {
		if err := cfg.wait(ctx, cfg.FailedDelay); err != nil {
			return Response{}, nil // closing
		}
		return Response{Msg: resp}, nil
	}, nil
}

// observeAuth tells the Observer, if it counts authentications.
func (s *Server) observeAuth(sess *Session, mech string, ok, reauth bool) {
	if o, is := s.cfg.Observer.(AuthObserver); is {
		o.SASLAuthentication(sess.ListenerName, mech, ok, reauth)
	}
}
