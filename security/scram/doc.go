// Package scram is the server side of SASL SCRAM-SHA-256 and
// SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them, and the check
// of a SASL PLAIN message (RFC 4616) against the same credentials. It is a
// leaf: plain values and pure functions over bytes, imported by cluster
// (which stores credentials in the metadata log and derives them from the
// salted passwords KIP-554's AlterUserScramCredentials carries) and by the
// protocol's SASL handlers.
//
// # Credentials
//
// A Credential is what Kafka stores for a user and a mechanism: the salt,
// the iteration count, StoredKey = H(HMAC(SaltedPassword, "Client Key"))
// and ServerKey = HMAC(SaltedPassword, "Server Key"). The password and the
// salted password are never kept: with a Credential a server can check a
// client's proof, and not impersonate the client. Iterations are between
// MinIterations and MaxIterations, Kafka's bounds for both mechanisms.
//
// # The exchange
//
// An Exchange is one authentication, a state machine fed the client's
// messages in order (Step):
//
//  1. client-first: the GS2 header "n,," or "n,a=AUTHZID," (no channel
//     binding; an authorization id must name the user itself), then
//     n=USER (with RFC 5802's =2C and =3D escapes) and r=CLIENT-NONCE. A
//     mandatory extension (m=) and any other extension are refused, as
//     Kafka refuses unsupported ones. The answer is server-first: the
//     client's nonce followed by the server's random one, the salt and the
//     iteration count.
//  2. client-final: c= must be the base64 of the GS2 header the client
//     sent ("biws" for "n,,"), r= must be exactly the nonce of
//     server-first (CVE-2024-56128: Kafka before 3.9.1 did not check it),
//     and p= the proof, checked with a constant-time comparison. The
//     answer is server-final, v= the server's signature, and the exchange
//     is done: User names the authenticated user.
//
// Any error ends the exchange; later steps fail. Malformed messages fail
// with ErrMalformed, wrong proofs with ErrAuthFailed.
//
// # Unknown users
//
// An unknown user is indistinguishable from a wrong password, by the
// answers and by the work done: the exchange goes on with a fake
// credential derived from the user name and Config.Secret with HMAC
// (the same salt and iteration count every time for the same name), and
// fails at the proof with the same error a wrong password gets. For this
// to hold across nodes and restarts the secret must be the same on every
// node of a cluster and kept: the broker gives the key the metadata image
// derives from the cluster secret (cluster.Image.DerivedSecret), not one
// drawn at each start. Kafka's own server refuses
// an unknown user at the first message; this one does not. The fake
// salt has the length kadm's and wren's tools give real ones
// (FakeSaltBytes) and the fake iteration count is Config.FakeIterations.
//
// # PLAIN
//
// Plain parses "[authzid] NUL authcid NUL passwd" (RFC 4616: the user
// and password not empty, the authorization id empty or the user) and
// checks the password against the user's credential, SCRAM-SHA-512's if
// the user has one, else SCRAM-SHA-256's: PBKDF2 with the credential's
// salt and iterations, then StoredKey compared in constant time. An
// unknown user costs the same PBKDF2 with a fake credential.
package scram
