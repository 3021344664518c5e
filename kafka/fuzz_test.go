package kafka

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// fuzzTable answers every key of the production table with an empty
// response of the right kind, after the production pre-checks, so the
// dispatcher's whole decode path runs without broker state.
func fuzzTable() []apiEntry {
	table := make([]apiEntry, len(apiTable))
	copy(table, apiTable[:])
	for i := range table {
		if table[i].Key == kmsg.ApiVersions {
			continue // the real handler needs no state
		}
		table[i].Handle = func(s *Server, req *Request) (Pending, error) {
			return Respond(req.Body.ResponseKind()), nil
		}
	}
	return table
}

// fuzzConn is a connection without a socket: the reader and dispatcher
// over an in-memory byte stream.
func fuzzConn(t testing.TB, s *Server, stream []byte) *conn {
	c := &conn{s: s, log: s.log, ctx: context.Background()}
	c.fr = wire.FrameReader{R: bytes.NewReader(stream), IdleTimeout: 1, FrameTimeout: 1}
	c.sess = Session{ctx: c.ctx, authenticated: true}
	return c
}

func seedFrames(f *testing.F) {
	for _, e := range apiTable {
		for v := e.Min; v <= e.Max; v++ {
			req := kmsg.RequestForKey(int16(e.Key))
			req.SetVersion(v)
			f.Add(requestFrame(req, 1, "seed"))
		}
	}
	f.Add(append(requestFrame(kmsg.NewPtrApiVersionsRequest(), 1, ""), requestFrame(metadataRequest(12), 2, "x")...))
	f.Add(frame(header(kmsg.Produce, 9, 1, "c", []byte{0}), produceBody(9, 2, 3)))
	f.Add(frame(header(kmsg.ApiVersions, 3, 1, "c", []byte{2, 1, 0, 1, 0}), []byte{4, 'k', 'g', 'o', 2, '1', 0}))
}

// FuzzRequestFrame writes arbitrary bytes into a connection's reader:
// frames are read, vetted, decoded and handled until the first error. It
// must never panic, never hold a frame larger than the limit, and every
// response a handler returns must encode.
func FuzzRequestFrame(f *testing.F) {
	seedFrames(f)
	const limit = 1 << 20
	s, err := newServer(ServerConfig{MaxRequestBytes: limit, Logger: slog.New(slog.DiscardHandler)}, nil, fuzzTable())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := fuzzConn(t, s, stream)
		for {
			fr, err := c.fr.ReadFrame(c.frameLimit(), c.checkKey, nil)
			if err != nil {
				if len(stream) > 0 && errors.Is(err, ErrIdle) {
					t.Fatalf("idle reported on an in-memory stream: %v", err)
				}
				return
			}
			if len(fr) > limit || cap(fr) != len(fr) {
				t.Fatalf("frame len %d cap %d, limit %d", len(fr), cap(fr), limit)
			}
			item, err := c.dispatch(fr) // not dispatchSafely: a panic must fail the fuzzer
			if err != nil {
				return
			}
			if item.pending == nil {
				continue
			}
			resp, err := item.pending(c.ctx)
			if err != nil {
				t.Fatalf("pending: %v", err)
			}
			if resp.Msg.Key() != item.key || resp.Msg.GetVersion() != item.version {
				t.Fatalf("response %d v%d for request %d v%d", resp.Msg.Key(), resp.Msg.GetVersion(), item.key, item.version)
			}
			resp.Msg.AppendTo(nil)
		}
	})
}

// FuzzRequestBody puts arbitrary bytes through the decode path of every
// key of the production table at every advertised version: pre-check,
// kmsg decode, and, when it decodes, an encode/decode round trip that must
// be stable.
func FuzzRequestBody(f *testing.F) {
	for i, e := range apiTable {
		for v := e.Min; v <= e.Max; v++ {
			req := kmsg.RequestForKey(int16(e.Key))
			req.SetVersion(v)
			f.Add(uint8(i), v-e.Min, req.AppendTo(nil))
		}
	}
	f.Fuzz(func(t *testing.T, row uint8, version int16, body []byte) {
		e := apiTable[int(row)%len(apiTable)]
		v := e.Min + int16(uint16(version)%uint16(e.Max-e.Min+1))
		if e.Precheck != nil {
			if err := e.Precheck(v, body); err != nil {
				return
			}
		}
		req := kmsg.RequestForKey(int16(e.Key))
		req.SetVersion(v)
		if err := req.ReadFrom(body); err != nil {
			return
		}
		once := req.AppendTo(nil)
		again := kmsg.RequestForKey(int16(e.Key))
		again.SetVersion(v)
		if err := again.ReadFrom(once); err != nil {
			t.Fatalf("%s v%d: re-encoded request does not decode: %v", e.Key.Name(), v, err)
		}
		if twice := again.AppendTo(nil); !bytes.Equal(once, twice) {
			t.Fatalf("%s v%d: encode/decode round trip unstable", e.Key.Name(), v)
		}
	})
}

// FuzzProducePrecheck cross-checks the pre-check's walk with kmsg's
// decoder: whenever kmsg decodes a body, the walk must have covered it
// completely and counted exactly its topics and partitions, and at least
// its distinct unknown tags, so the limits it enforces are the real ones.
func FuzzProducePrecheck(f *testing.F) {
	for _, v := range []int16{0, 3, 9, 13} {
		f.Add(v, produceBody(v, 2, 3))
	}
	f.Fuzz(func(t *testing.T, version int16, body []byte) {
		v := int16(uint16(version) % uint16(kmsg.NewPtrProduceRequest().MaxVersion()+1))
		w := walkProduce(v, body)
		req := kmsg.NewPtrProduceRequest()
		req.Version = v
		if req.ReadFrom(body) != nil {
			return
		}
		if w.bad {
			t.Fatalf("v%d: kmsg decodes what the walk could not", v)
		}
		var arrays, tags int64 = int64(len(req.Topics)), int64(req.UnknownTags.Len())
		for _, tp := range req.Topics {
			arrays += int64(len(tp.Partitions))
			tags += int64(tp.UnknownTags.Len())
			for _, p := range tp.Partitions {
				tags += int64(p.UnknownTags.Len())
			}
		}
		if w.entries != arrays || w.tags < tags {
			t.Fatalf("v%d: walk counted %d entries and %d tags, kmsg decoded %d and %d",
				v, w.entries, w.tags, arrays, tags)
		}
	})
}

// FuzzSASLSession writes arbitrary bytes into a SASL connection's reader:
// frames are read, vetted and handled by the real SASL handlers until the
// first error or failed authentication. It must never panic, never take
// a frame above the SASL limit before authentication, and never
// authenticate anyone but a user of the store, under that user's name.
func FuzzSASLSession(f *testing.F) {
	const limit = 4096
	auth := testAuthenticator(f)
	table := testTable(append(saslRows(), metadataRow(func(s *Server, req *Request) (Pending, error) {
		return Respond(metadataResponse(req)), nil
	}))...)
	s, err := newServer(ServerConfig{Logger: slog.New(slog.DiscardHandler),
		SASL: &SASLConfig{Mechanisms: allMechanisms, Authenticator: auth, MaxReceiveSize: limit, FailedDelay: -1}}, nil, table)
	if err != nil {
		f.Fatal(err)
	}
	handshakeV := func(v int16, mech string) []byte {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = v, mech
		return requestFrame(r, 1, "c")
	}
	handshake := func(mech string) []byte { return handshakeV(1, mech) }
	authenticate := func(v int16, token string) []byte {
		r := kmsg.NewPtrSASLAuthenticateRequest()
		r.Version, r.SASLAuthBytes = v, []byte(token)
		return requestFrame(r, 2, "c")
	}
	cat := func(b ...[]byte) []byte { return bytes.Join(b, nil) }
	f.Add(cat(handshake(MechanismPlain), authenticate(2, "\x00alice\x00alice-secret"), requestFrame(metadataRequest(12), 3, "c"),
		handshake(MechanismPlain), authenticate(1, "\x00alice\x00alice-secret")))
	f.Add(cat(handshake(MechanismPlain), authenticate(0, "\x00bob\x00wrong")))
	f.Add(cat(handshake(MechanismScramSHA256), authenticate(2, "n,,n=alice,r=abcdefgh"), authenticate(2, "c=biws,r=abcdefgh,p=AAAA")))
	f.Add(cat(handshake(MechanismScramSHA512), authenticate(2, "n,a=bob,n=alice,r=x")))
	f.Add(cat(authenticate(2, "x"), handshake("GSSAPI")))
	// SaslHandshake v0: bare tokens follow.
	f.Add(cat(handshakeV(0, MechanismPlain), frame([]byte("\x00alice\x00alice-secret")), requestFrame(metadataRequest(12), 3, "c")))
	f.Add(cat(handshakeV(0, MechanismScramSHA512), frame([]byte("n,,n=bob,r=abcdefgh")), frame([]byte("c=biws,r=abcdefgh,p=AAAA"))))
	f.Fuzz(func(t *testing.T, stream []byte) {
		c := fuzzConn(t, s, stream)
		c.sess.authenticated = false
		for {
			before := c.sess.authenticated
			checkKey := c.checkKey
			if c.sess.sasl.raw {
				checkKey = nil
			}
			fr, err := c.fr.ReadFrame(c.frameLimit(), checkKey, nil)
			if err != nil {
				return
			}
			if !before && len(fr) > limit {
				t.Fatalf("a frame of %d bytes before authentication, limit %d", len(fr), limit)
			}
			var item queued
			if c.sess.sasl.raw {
				item = s.saslRawToken(&c.sess, fr)
			} else if item, err = c.dispatch(fr); err != nil { // not dispatchSafely: a panic must fail the fuzzer
				return
			}
			if c.sess.authenticated {
				user := strings.TrimPrefix(c.sess.principal, "User:")
				if _, ok := testUsers[user]; !ok || c.sess.principal != "User:"+user {
					t.Fatalf("authenticated as %q", c.sess.principal)
				}
			}
			if item.pending != nil {
				resp, err := item.pending(c.ctx)
				if err != nil {
					t.Fatalf("pending: %v", err)
				}
				if resp.Msg != nil {
					resp.Msg.AppendTo(nil)
				}
			}
			if item.closeAfter != nil {
				return
			}
		}
	})
}
