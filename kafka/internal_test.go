package kafka

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// dialInternal opens a connection of il, closed with the test.
func dialInternal(t *testing.T, il *InternalListener) *rawClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	nc, err := il.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &rawClient{t: t, nc: nc}
}

// TestInternalListener: an internal connection is served as
// User:wren-uplink without authenticating, on a server whose ACLs would
// allow everything: the keys that describe and read topics are answered,
// every other key is refused with its authorization error and changes
// nothing, and the ACL authorizer is never asked. It is outside the
// connection bounds (neither refused at MaxConnections nor evicted to
// make room) and the request budgets.
func TestInternalListener(t *testing.T) {
	t.Run("refusals", func(t *testing.T) {
		acls := &fakeAuthorizer{allow: allowAll}
		f, g := authFixture(t, acls)
		// The server's clients must authenticate with SASL: the internal
		// connection is authenticated from the start all the same.
		f.s.cfg.RequireAuthentication = true
		t.Cleanup(func() { f.s.Close() })
		il := f.s.InternalListener(Listener{Name: "SASL_SSL", Host: "node1.test", Port: 9093})
		c := dialInternal(t, il)
		c.apiVersions(1)
		corr := int32(2)
		served := 0
		for _, e := range apiTable {
			rule := authRules[e.Key]
			if rule.none || rule.req == nil {
				continue
			}
			req := rule.req()
			req.SetVersion(e.Max)
			c.send(requestFrame(req, corr, "wren-uplink-test"))
			got, resp := c.readResponse(e.Key, e.Max)
			if got != corr {
				t.Fatalf("%s: correlation id %d, want %d", e.Key.Name(), got, corr)
			}
			corr++
			codes := rule.codes(resp)
			if internalKeys[e.Key] {
				served++
				for _, code := range codes {
					switch code {
					case taf.Code, gaf.Code, caf.Code, kerr.TransactionalIDAuthorizationFailed.Code:
						t.Errorf("%s: an internal key, yet refused: %s", e.Key.Name(), codeName(code))
					}
				}
				continue
			}
			want := make([]int16, len(rule.refused))
			for i, k := range rule.refused {
				if k != nil {
					want[i] = k.Code
				}
			}
			if !slices.Equal(codes, want) {
				t.Errorf("%s: codes %v, want the refusal %v", e.Key.Name(), codeNames(codes), codeNames(want))
			}
		}
		if served != len(internalKeys)-1 { // all but ApiVersions have a request
			t.Errorf("%d internal keys tried, want %d", served, len(internalKeys)-1)
		}
		if se := sideEffects(f, g); len(se) > 0 {
			t.Errorf("refused, yet %v", se)
		}
		// A SASL exchange cannot make it another principal.
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "PLAIN"
		c.send(requestFrame(hs, corr, "wren-uplink-test"))
		if _, resp := c.readResponse(kmsg.SASLHandshake, 1); resp.(*kmsg.SASLHandshakeResponse).ErrorCode != kerr.IllegalSaslState.Code {
			t.Errorf("SaslHandshake: %s, want ILLEGAL_SASL_STATE", codeName(resp.(*kmsg.SASLHandshakeResponse).ErrorCode))
		}
		if qs := acls.questions(); len(qs) > 0 {
			t.Errorf("the ACL authorizer was asked %d times about the internal principal, first %+v", len(qs), qs[0])
		}
		if n := f.s.Connections(); n != 0 {
			t.Errorf("%d connections counted, want the internal one not counted", n)
		}
	})

	t.Run("pull writes", func(t *testing.T) {
		// With SetInternalWritable, Produce to the topics it names and an
		// idempotent producer's InitProducerId are allowed; Produce to
		// another topic is refused, and nothing else changes.
		acls := &fakeAuthorizer{allow: allowAll}
		f, _ := authFixture(t, acls)
		t.Cleanup(func() { f.s.Close() })
		il := f.s.InternalListener(Listener{Name: "PLAINTEXT", Host: "node1.test", Port: 9092})
		c := dialInternal(t, il)
		c.apiVersions(1)
		corr := int32(2)
		try := func(key kmsg.Key) []int16 {
			e := f.s.apis.lookup(int16(key))
			req := authRules[key].req()
			req.SetVersion(e.Max)
			c.send(requestFrame(req, corr, "wren-uplink-test"))
			corr++
			_, resp := c.readResponse(key, e.Max)
			return authRules[key].codes(resp)
		}
		for _, w := range []struct {
			topic   string
			refused bool
		}{{"other", true}, {"t", false}} {
			f.s.SetInternalWritable(func(topic string) bool { return topic == w.topic })
			codes := try(kmsg.Produce)
			if refused := slices.Contains(codes, taf.Code); refused != w.refused {
				t.Errorf("Produce to t, writable %q: codes %v", w.topic, codeNames(codes))
			}
			if codes := try(kmsg.InitProducerID); slices.Contains(codes, caf.Code) {
				t.Errorf("InitProducerId, writable %q: codes %v", w.topic, codeNames(codes))
			}
			if codes := try(kmsg.DeleteRecords); !slices.Contains(codes, taf.Code) {
				t.Errorf("DeleteRecords, writable %q: codes %v, want refused", w.topic, codeNames(codes))
			}
		}
		if qs := acls.questions(); len(qs) > 0 {
			t.Errorf("the ACL authorizer was asked %d times about the internal principal", len(qs))
		}
	})

	t.Run("franz-go", func(t *testing.T) {
		// A kgo client reads Metadata through the listener's dialer,
		// whatever address it is given.
		f, _ := authFixture(t, &fakeAuthorizer{})
		t.Cleanup(func() { f.s.Close() })
		il := f.s.InternalListener(Listener{Name: "PLAINTEXT", Host: "node1.test", Port: 9092})
		cl, err := kgo.NewClient(kgo.SeedBrokers("wren-internal:1"), kgo.Dialer(il.DialContext))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("t")
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != 0 || len(resp.Topics[0].Partitions) != 3 {
			t.Fatalf("Metadata of t through kgo: %+v", resp.Topics)
		}
	})

	t.Run("connection bounds", func(t *testing.T) {
		ts := startServer(t, ServerConfig{MaxConnections: 1}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
			return Respond(metadataResponse(req)), nil
		})))
		il := ts.InternalListener(Listener{Name: "PLAINTEXT"})
		a := dial(t, ts.addr)
		a.apiVersions(1)
		// a works (not idle for eviction for 30 s).
		a.send(requestFrame(metadataRequest(12), 2, "a"))
		a.readResponse(kmsg.Metadata, 12)
		// At MaxConnections, an internal connection is served.
		in := dialInternal(t, il)
		in.apiVersions(1)
		// Idle as long as a client connection can be before it may be
		// closed to make room: a newcomer is refused rather than close it.
		ts.mu.Lock()
		for c := range ts.internal {
			c.lastActive.Store(time.Now().Add(-time.Hour).UnixNano())
		}
		ts.mu.Unlock()
		dial(t, ts.addr).expectClosed()
		ts.logs.waitFor(t, "of the refused connection", func(r logRecord) bool {
			return r.msg == "connection refused: max.connections reached"
		})
		in.apiVersions(2)
		if n := ts.Connections(); n != 1 {
			t.Errorf("%d connections counted, want 1", n)
		}
	})

	t.Run("request budget", func(t *testing.T) {
		ts := startServer(t, ServerConfig{QueuedMaxRequests: 1}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
			return Respond(metadataResponse(req)), nil
		})))
		il := ts.InternalListener(Listener{Name: "PLAINTEXT"})
		first := dial(t, ts.addr)
		head, rest := paddedMetadata(t, 1, 4096)
		first.send(head)
		poll(t, "the client request to take the only slot", func() bool { return ts.requests.InUse() == 1 })
		// The internal request is answered while the slot is held.
		in := dialInternal(t, il)
		in.send(requestFrame(metadataRequest(12), 2, "internal"))
		if corr, _ := in.readResponse(kmsg.Metadata, 12); corr != 2 {
			t.Fatalf("internal: correlation id %d", corr)
		}
		first.send(rest)
		if corr, _ := first.readResponse(kmsg.Metadata, 12); corr != 1 {
			t.Fatalf("first: correlation id %d", corr)
		}
	})

	t.Run("closed server", func(t *testing.T) {
		ts := startServer(t, ServerConfig{}, testTable())
		il := ts.InternalListener(Listener{Name: "PLAINTEXT"})
		in := dialInternal(t, il)
		in.apiVersions(1)
		ts.Close()
		in.expectClosed()
		if _, err := il.Dial(context.Background()); err != ErrServerClosed {
			t.Fatalf("Dial after Close: %v, want ErrServerClosed", err)
		}
	})
}
