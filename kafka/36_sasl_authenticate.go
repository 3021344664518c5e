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
// * Authorization: none: it is the authentication.

// saslFailureMessage is the one message of a failed authentication.
func saslFailureMessage(mech string) string {
	return "Authentication failed during authentication due to invalid credentials with SASL mechanism " + mech
}

func (s *Server) handleSaslAuthenticate(req *Request) (Pending, error) {
	r := req.Body.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
	cfg := req.Session.saslConfig
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

	out, done, err := s.saslStep(sess, r.SASLAuthBytes)
	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := saslFailureMessage(sa.mech)
		resp.ErrorMessage = &msg
		return s.saslFailed(sess, resp, saslFailureReason(sa.mech, err))
	}
	resp.SASLAuthBytes = out
	if done && cfg.MaxReauth > 0 {
		resp.SessionLifetimeMillis = cfg.MaxReauth.Milliseconds()
	}
	return Respond(resp), nil
}

// saslFailureReason is what the log says of a failed step.
func saslFailureReason(mech string, err error) string {
	if errors.Is(err, scram.ErrMalformed) {
		return mech + ": malformed token"
	}
	return mech + ": invalid credentials"
}

// saslStep feeds one client token to the exchange in progress and returns
// the server's token. done: the session is now authenticated (or
// re-authenticated), with its lifetime set. An error fails the exchange;
// the caller answers and closes.
func (s *Server) saslStep(sess *Session, token []byte) (out []byte, done bool, err error) {
	sa := &sess.sasl
	var user string
	if sa.exchange != nil {
		out, err = sa.exchange.Step(token)
		if err != nil {
			return nil, false, err
		}
		if !sa.exchange.Done() {
			return out, false, nil
		}
		user = sa.exchange.User()
	} else if user, err = sa.auth.Plain(token); err != nil {
		return nil, false, err
	} else {
		out = []byte{} // PLAIN's server answer is empty
	}
	principal := "User:" + user
	if sa.reauth && principal != sess.principal {
		return nil, false, fmt.Errorf("%w: re-authentication as %s changes the principal %s", scram.ErrAuthFailed, principal, sess.principal)
	}
	reauth := sa.reauth
	sess.Authenticate(principal)
	sa.step, sa.auth, sa.exchange, sa.reauth, sa.raw = saslIdle, nil, nil, false, false
	sa.authentications++
	sa.expiry = time.Time{}
	if maxReauth := sess.saslConfig.MaxReauth; maxReauth > 0 {
		sa.expiry = s.now().Add(maxReauth)
	}
	s.observeAuth(sess, sa.mech, true, reauth)
	s.log.Debug("SASL authenticated", "remote", sess.RemoteAddr, "principal", principal,
		"mechanism", sa.mech, "authentications", sa.authentications)
	return out, true, nil
}

// saslRawToken handles a frame of a connection that chose its mechanism
// with SaslHandshake v0: the frame is the client's SASL token itself, and
// the server's token goes back as a frame of its own, without a header
// (queued.raw). A failure is answered with nothing: the connection closes
// after the failed-authentication delay, as Kafka's does.
func (s *Server) saslRawToken(sess *Session, token []byte) queued {
	item := queued{key: int16(kmsg.SASLAuthenticate), raw: true}
	out, _, err := s.saslStep(sess, token)
	if err != nil {
		sess.sasl.raw = false
		p, _ := s.saslFailed(sess, nil, saslFailureReason(sess.sasl.mech, err)+" (raw SASL token)")
		item.pending, item.closeAfter = p, sess.closeAfter
		sess.closeAfter = nil
		return item
	}
	item.rawOut = out
	item.pending = func(context.Context) (Response, error) { return Response{}, nil }
	return item
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
	cfg := sess.saslConfig
	return func(ctx context.Context) (Response, error) {
		if err := cfg.wait(ctx, cfg.FailedDelay); err != nil || resp == nil {
			return Response{}, nil // closing, or nothing to answer
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
