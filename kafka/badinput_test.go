package kafka

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestBadFrames sends each malformed input on its own connection and
// checks that the server closes it for the expected reason, and that a new
// connection is still served afterwards.
func TestBadFrames(t *testing.T) {
	const maxBytes = 4 << 20 // above smallRequestBytes, to reach the per-key cap
	ts := startServer(t, ServerConfig{MaxRequestBytes: maxBytes, FrameTimeout: 200 * time.Millisecond},
		testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
			return Respond(metadataResponse(req)), nil
		})))

	u32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	u16 := func(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }
	apiV3 := func(tags []byte) []byte { return header(kmsg.ApiVersions, 3, 1, "c", tags) }
	okBodyV3 := []byte{4, 'k', 'g', 'o', 2, '1', 0} // compact "kgo", "1", no tags

	cases := []struct {
		name string
		send [][]byte
		// halfClose ends the client's side after sending.
		halfClose bool
		want      error
	}{
		{name: "negative size", send: [][]byte{u32(0xffffffff), make([]byte, 16)}, want: ErrFrameSize},
		{name: "min int32 size", send: [][]byte{u32(0x80000000)}, want: ErrFrameSize},
		{name: "zero size", send: [][]byte{u32(0)}, want: ErrFrameSize},
		{name: "size over limit", send: [][]byte{u32(maxBytes + 1)}, want: ErrFrameSize},
		{
			// Only the size and the key are sent: the cap applies before
			// the body is buffered.
			name: "ApiVersions over its key cap",
			send: [][]byte{u32(smallRequestBytes + 1), u16(18)},
			want: ErrFrameSize,
		},
		{name: "one-byte frame", send: [][]byte{frame([]byte{0})}, want: ErrMalformedHeader},
		{name: "header cut short", send: [][]byte{frame(u16(18), u16(0), u16(0))}, want: ErrMalformedHeader},
		{name: "client id longer than frame", send: [][]byte{frame(u16(18), u16(0), u32(1), u16(100), []byte("abc"))}, want: ErrMalformedHeader},
		{name: "client id length -2", send: [][]byte{frame(u16(18), u16(0), u32(1), u16(0xfffe))}, want: ErrMalformedHeader},
		{name: "header tag count overflows", send: [][]byte{frame(apiV3([]byte{0xff, 0xff, 0xff, 0xff, 0xff}), okBodyV3)}, want: ErrMalformedHeader},
		{name: "header tag count truncated", send: [][]byte{frame(apiV3([]byte{0x80}))}, want: ErrMalformedHeader},
		{name: "header tag count huge", send: [][]byte{frame(apiV3([]byte{0xff, 0xff, 0xff, 0x7f}), okBodyV3)}, want: ErrMalformedHeader},
		{name: "duplicate header tags", send: [][]byte{frame(apiV3([]byte{2, 1, 0, 1, 0}), okBodyV3)}, want: ErrMalformedHeader},
		{name: "unordered header tags", send: [][]byte{frame(apiV3([]byte{2, 2, 0, 1, 0}), okBodyV3)}, want: ErrMalformedHeader},
		{name: "oversized header tag", send: [][]byte{frame(apiV3([]byte{1, 0, 100, 1, 2}), okBodyV3)}, want: ErrMalformedHeader},
		{name: "body varint overflows", send: [][]byte{frame(apiV3([]byte{0}), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x01})}, want: ErrMalformedBody},
		{name: "body compact string past end", send: [][]byte{frame(apiV3([]byte{0}), []byte{0x7f, 'a', 'b'})}, want: ErrMalformedBody},
		{name: "body truncated", send: [][]byte{frame(apiV3([]byte{0}), []byte{4, 'k'})}, want: ErrMalformedBody},
		{
			name: "huge array count, short body",
			send: [][]byte{frame(header(kmsg.Metadata, 1, 1, "c", nil), u32(0x7fffffff), []byte{0, 1, 'a'})},
			want: ErrMalformedBody,
		},
		{
			name: "huge compact array count, short body",
			send: [][]byte{frame(header(kmsg.Metadata, 12, 1, "c", []byte{0}), []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0})},
			want: ErrMalformedBody,
		},
		{name: "unknown api key", send: [][]byte{frame(header(9999, 0, 1, "c", nil))}, want: ErrUnknownAPIKey},
		{name: "negative api key", send: [][]byte{frame(header(-1, 0, 1, "c", nil))}, want: ErrUnknownAPIKey},
		{name: "key not in the table", send: [][]byte{frame(header(kmsg.Produce, 9, 1, "c", []byte{0}))}, want: ErrUnknownAPIKey},
		{name: "version above range", send: [][]byte{requestFrame(metadataRequest(13), 1, "c")}, want: ErrUnsupportedVersion},
		{name: "negative version", send: [][]byte{frame(header(kmsg.ApiVersions, -1, 1, "c", nil))}, want: ErrUnsupportedVersion},
		{name: "stalled in size prefix", send: [][]byte{{0, 0}}, want: ErrFrameStalled},
		{name: "stalled in body", send: [][]byte{u32(100), u16(18), make([]byte, 8)}, want: ErrFrameDeadline},
		{name: "truncated body", send: [][]byte{u32(100), u16(18), make([]byte, 8)}, halfClose: true, want: ErrFrameTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			closedWith := func(r logRecord) bool { return r.msg == "closing connection" && errors.Is(r.err(), tc.want) }
			before := ts.logs.count(closedWith)
			c := dial(t, ts.addr)
			c.send(tc.send...)
			if tc.halfClose {
				c.nc.(interface{ CloseWrite() error }).CloseWrite()
			}
			if got := c.expectClosed(); len(got) != 0 {
				t.Fatalf("got a %d-byte answer, want none", len(got))
			}
			ts.logs.waitAfter(t, "of this close", before, closedWith)
			dial(t, ts.addr).apiVersions(2)
		})
	}
}

// TestHugeArrayCountsAllocateNothing feeds every version of every kmsg
// request a short body holding a huge array count at each offset (the
// CVE-2022-34917 shape) and checks that decoding allocates next to nothing:
// kmsg checks count x minimum element size against the bytes left first.
func TestHugeArrayCountsAllocateNothing(t *testing.T) {
	const limit = 256 << 10 // all bodies of a version together
	for k := int16(0); k < 200; k++ {
		proto := kmsg.RequestForKey(k)
		if proto == nil {
			continue
		}
		for version := int16(0); version <= proto.MaxVersion(); version++ {
			proto.SetVersion(version)
			huge := binary.BigEndian.AppendUint32(nil, 0x7fffff00)
			if proto.IsFlexible() {
				huge = []byte{0xff, 0xff, 0xff, 0xff, 0x0f}
			}
			var bodies [][]byte
			for off := range 48 {
				for _, fill := range []byte{0, 1} {
					b := bytes.Repeat([]byte{fill}, off)
					b = append(b, huge...)
					bodies = append(bodies, append(b, bytes.Repeat([]byte{fill}, 16)...))
				}
			}
			var total uint64
			for _, b := range bodies {
				alloc, _ := decodeAlloc(kmsg.Key(k), version, b)
				total += alloc
			}
			if total > limit {
				t.Errorf("%s v%d: %d bytes allocated decoding %d short bodies with huge counts", kmsg.NameForKey(k), version, total, len(bodies))
			}
		}
	}
}

// TestAuthentication: with RequireAuthentication, only BeforeAuth keys and
// small frames pass until a handler authenticates the session.
func TestAuthentication(t *testing.T) {
	principals := make(chan string, 4)
	ts := startServer(t, ServerConfig{RequireAuthentication: true, MaxRequestBytesBeforeAuth: 4096},
		testTable(
			metadataRow(func(s *Server, req *Request) (Pending, error) {
				principals <- req.Session.Principal()
				return Respond(metadataResponse(req)), nil
			}),
			apiEntry{Key: kmsg.SASLAuthenticate, Min: 0, Max: 2, BeforeAuth: true, Handle: func(s *Server, req *Request) (Pending, error) {
				req.Session.Authenticate(string(req.Body.(*kmsg.SASLAuthenticateRequest).SASLAuthBytes))
				return Respond(req.Body.ResponseKind()), nil
			}},
		))
	bigClientID := string(bytes.Repeat([]byte{'x'}, 5000))

	c := dial(t, ts.addr)
	c.apiVersions(1)
	c.send(requestFrame(metadataRequest(12), 2, "c"))
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrNotAuthenticated)

	c = dial(t, ts.addr)
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(requestFrame(req, 1, bigClientID))
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrFrameSize)

	c = dial(t, ts.addr)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.Version = 2
	auth.SASLAuthBytes = []byte("alice")
	c.send(requestFrame(auth, 1, "c"))
	c.readResponse(kmsg.SASLAuthenticate, 2)
	c.send(requestFrame(metadataRequest(12), 2, bigClientID))
	if corr, _ := c.readResponse(kmsg.Metadata, 12); corr != 2 {
		t.Fatalf("correlation id %d", corr)
	}
	if p := recv(t, principals, "metadata call"); p != "alice" {
		t.Fatalf("principal %q, want alice", p)
	}
}

// TestHandlerFailures: each kind of handler failure closes only its own
// connection, with the expected reason; the server keeps serving.
func TestHandlerFailures(t *testing.T) {
	type failure func(req *Request) (Pending, error)
	failures := map[string]struct {
		f    failure
		want error
	}{
		"handler error": {func(*Request) (Pending, error) { return nil, errors.New("boom") }, nil},
		"handler panic": {func(*Request) (Pending, error) { panic("boom") }, ErrHandlerPanic},
		"pending error": {func(*Request) (Pending, error) {
			return func(context.Context) (Response, error) { return Response{}, errors.New("boom") }, nil
		}, nil},
		"pending panic": {func(*Request) (Pending, error) {
			return func(context.Context) (Response, error) { panic("boom") }, nil
		}, ErrHandlerPanic},
		"wrong response key": {func(*Request) (Pending, error) {
			return Respond(kmsg.NewPtrApiVersionsResponse()), nil
		}, ErrBadResponse},
		"wrong response version": {func(req *Request) (Pending, error) {
			resp := metadataResponse(req)
			resp.Version--
			return Respond(resp), nil
		}, ErrBadResponse},
		"nil typed response": {func(*Request) (Pending, error) {
			return Respond((*kmsg.MetadataResponse)(nil)), nil
		}, ErrHandlerPanic},
		"both Msg and Spliced": {func(req *Request) (Pending, error) {
			return func(context.Context) (Response, error) {
				return Response{Msg: metadataResponse(req), Spliced: &SplicedResponse{}}, nil
			}, nil
		}, ErrBadResponse},
		"file chunk with bytes": {func(req *Request) (Pending, error) {
			return RespondSpliced(&SplicedResponse{Chunks: []Chunk{{Bytes: []byte{1}, File: fileSliceForTest(t)}}}), nil
		}, ErrBadResponse},
	}
	for name, tc := range failures {
		t.Run(name, func(t *testing.T) {
			ts := startServer(t, ServerConfig{}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
				return tc.f(req)
			})))
			c := dial(t, ts.addr)
			c.send(requestFrame(metadataRequest(12), 1, "c"))
			if got := c.expectClosed(); len(got) != 0 {
				t.Fatalf("got %d bytes, want none", len(got))
			}
			r := ts.logs.waitFor(t, "of the close", func(r logRecord) bool { return r.msg == "closing connection" })
			if tc.want != nil && !errors.Is(r.err(), tc.want) {
				t.Fatalf("closed with %v, want %v", r.err(), tc.want)
			}
			dial(t, ts.addr).apiVersions(2)
		})
	}
}
