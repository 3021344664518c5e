package kafka

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/wire"
)

// TestFranzGoApiVersions: a real client connects, opens with ApiVersions v5,
// gets the v0 UNSUPPORTED_VERSION answer, retries at v4, and kadm lists
// exactly the keys of the production table.
func TestFranzGoApiVersions(t *testing.T) {
	var ts *testServer
	// kadm finds brokers through Metadata; a stub that needs no broker
	// state names this server as node 0.
	table := slices.Clone(apiTable[:])
	for i := range table {
		if table[i].Key == kmsg.Metadata {
			table[i].Handle = func(s *Server, req *Request) (Pending, error) {
				resp := metadataResponse(req)
				host, port, _ := net.SplitHostPort(ts.addr)
				p, _ := strconv.Atoi(port)
				resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: host, Port: int32(p)}}
				resp.ControllerID = 0
				return Respond(resp), nil
			}
		}
	}
	ts = startServer(t, ServerConfig{}, table)

	cl, err := kgo.NewClient(kgo.SeedBrokers(ts.addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	versions, err := kadm.NewClient(cl).ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := versions[0]
	if !ok || v.Err != nil {
		t.Fatalf("broker 0 api versions: %+v, err %v", v, v.Err)
	}
	var got []int16
	v.EachKeySorted(func(key, minV, maxV int16) {
		got = append(got, key, minV, maxV)
	})
	var want []int16
	for _, e := range buildAPIIndex(table).versions {
		want = append(want, e.ApiKey, e.MinVersion, e.MaxVersion)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("advertised (key, min, max): %v, want %v", got, want)
	}
	ts.logs.waitFor(t, "of the ApiVersions v5 downgrade", func(r logRecord) bool {
		return r.msg == "ApiVersions version above ours, answering in v0" && r.attrs["version"] == int64(5)
	})
}

// TestPipelinedResponsesInOrder: five requests in one write. The first
// one's Pending blocks; the handlers of the next four still run (in order)
// meanwhile, the second sends no response (acks=0 style), and responses
// leave in request order once the first completes.
func TestPipelinedResponsesInOrder(t *testing.T) {
	handled := make(chan int32, 16)
	first := make(gate)
	ts := startServer(t, ServerConfig{}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		corr := req.Header.CorrelationID
		handled <- corr
		resp := metadataResponse(req)
		switch corr {
		case 1:
			return func(ctx context.Context) (Response, error) {
				if err := first.wait(ctx); err != nil {
					return Response{}, err
				}
				return Response{Msg: resp}, nil
			}, nil
		case 2:
			return nil, nil
		}
		return Respond(resp), nil
	})))

	c := dial(t, ts.addr)
	var frames []byte
	for corr := int32(1); corr <= 5; corr++ {
		frames = append(frames, requestFrame(metadataRequest(12), corr, "pipeline")...)
	}
	c.send(frames)
	for want := int32(1); want <= 5; want++ {
		if got := recv(t, handled, "handler call"); got != want {
			t.Fatalf("handler %d ran, want %d: handlers must run in request order", got, want)
		}
	}
	// All five handled while the first response is still pending.
	close(first)
	for _, want := range []int32{1, 3, 4, 5} {
		if corr, _ := c.readResponse(kmsg.Metadata, 12); corr != want {
			t.Fatalf("response for correlation id %d, want %d", corr, want)
		}
	}
}

// TestBackpressure: with MaxInFlightPerConn 2 and every response pending,
// the reader handles four requests (one in the writer, two queued, one
// waiting to be queued) and then stops reading.
func TestBackpressure(t *testing.T) {
	handled := make(chan int32, 16)
	open := make(gate)
	ts := startServer(t, ServerConfig{MaxInFlightPerConn: 2}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		handled <- req.Header.CorrelationID
		resp := metadataResponse(req)
		return func(ctx context.Context) (Response, error) {
			return Response{Msg: resp}, open.wait(ctx)
		}, nil
	})))
	c := dial(t, ts.addr)
	var frames []byte
	for corr := int32(1); corr <= 10; corr++ {
		frames = append(frames, requestFrame(metadataRequest(12), corr, "bp")...)
	}
	c.send(frames)
	for want := int32(1); want <= 4; want++ {
		if got := recv(t, handled, "handler call"); got != want {
			t.Fatalf("handled %d, want %d", got, want)
		}
	}
	// Asserting an absence needs some time to pass; 200 ms is far more
	// than handling a request takes on loopback.
	select {
	case corr := <-handled:
		t.Fatalf("request %d handled beyond the in-flight bound", corr)
	case <-time.After(200 * time.Millisecond):
	}
	close(open)
	for want := int32(1); want <= 10; want++ {
		if corr, _ := c.readResponse(kmsg.Metadata, 12); corr != want {
			t.Fatalf("response %d, want %d", corr, want)
		}
	}
}

// TestIdleTimeout: an idle connection is closed, one waiting for a slow
// response is not.
func TestIdleTimeout(t *testing.T) {
	const idle = 150 * time.Millisecond
	open := make(gate)
	ts := startServer(t, ServerConfig{IdleTimeout: idle}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		resp := metadataResponse(req)
		return func(ctx context.Context) (Response, error) {
			return Response{Msg: resp}, open.wait(ctx)
		}, nil
	})))

	// The server arms its idle deadline when it accepts, which can come
	// before dial returns here: time from before the dial.
	start := time.Now()
	idleConn := dial(t, ts.addr)
	idleConn.expectClosed()
	if d := time.Since(start); d < idle {
		t.Fatalf("closed after %v, before the idle timeout %v", d, idle)
	}
	ts.logs.waitFor(t, "of the idle close", func(r logRecord) bool { return errors.Is(r.err(), ErrIdle) })

	busy := dial(t, ts.addr)
	busy.send(requestFrame(metadataRequest(12), 7, "busy"))
	// Wait several idle periods for a response that is pending: the
	// connection must stay open (a read timeout here, not EOF).
	busy.nc.SetReadDeadline(time.Now().Add(4 * idle))
	var b [1]byte
	if _, err := busy.nc.Read(b[:]); !wire.IsTimeout(err) {
		t.Fatalf("busy connection: read returned %v, want a timeout (still open, nothing sent)", err)
	}
	close(open)
	if corr, _ := busy.readResponse(kmsg.Metadata, 12); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
}

// TestCloseCompletesPendings: Close cancels a Pending that waits, does not
// write its response, releases its spliced response exactly once, and
// returns; Serve then reports ErrServerClosed. Close is idempotent.
func TestCloseCompletesPendings(t *testing.T) {
	var calls, releases atomic.Int32
	started := make(chan struct{})
	ts := startServer(t, ServerConfig{}, testTable(metadataRow(func(s *Server, req *Request) (Pending, error) {
		return func(ctx context.Context) (Response, error) {
			calls.Add(1)
			close(started)
			<-ctx.Done()
			return Response{Spliced: &SplicedResponse{
				Chunks:  []Chunk{{Bytes: []byte("never sent")}},
				Release: func() { releases.Add(1) },
			}}, nil
		}, nil
	})))
	c := dial(t, ts.addr)
	c.send(requestFrame(metadataRequest(12), 1, "close"))
	recv(t, started, "pending call")

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); ts.Close() }()
	}
	wg.Wait()
	if got := c.expectClosed(); len(got) != 0 {
		t.Fatalf("got %d bytes after Close, want none", len(got))
	}
	if calls.Load() != 1 || releases.Load() != 1 {
		t.Fatalf("pending called %d times, released %d times; want 1 and 1", calls.Load(), releases.Load())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Close: %v", err)
	}
}

// TestMaxConnections: the connection beyond the bound is closed at once;
// once one closes, a new one is served.
func TestMaxConnections(t *testing.T) {
	ts := startServer(t, ServerConfig{MaxConnections: 2}, testTable())
	a, b := dial(t, ts.addr), dial(t, ts.addr)
	a.apiVersions(1)
	b.apiVersions(1)
	dial(t, ts.addr).expectClosed()
	ts.logs.waitFor(t, "of the refused connection", func(r logRecord) bool {
		return r.msg == "connection refused: max.connections reached"
	})
	a.nc.Close()
	// The server notices a's close asynchronously: poll with a deadline.
	deadline := time.Now().Add(waitTimeout)
	for {
		ts.mu.Lock()
		n := len(ts.conns)
		ts.mu.Unlock()
		if n < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still tracked after the client closed one", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	dial(t, ts.addr).apiVersions(2)
}

// TestUnsupportedApiVersions: a version above ours gets the KIP-511 answer,
// in v0 format, on a connection that stays open.
func TestUnsupportedApiVersions(t *testing.T) {
	ts := startServer(t, ServerConfig{}, testTable())
	for _, version := range []int16{5, 6, 127, 32767} {
		c := dial(t, ts.addr)
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = version
		req.ClientSoftwareName, req.ClientSoftwareVersion = "future", "9"
		c.send(requestFrame(req, 42, "future"))
		corr, resp := c.readResponse(kmsg.ApiVersions, 0)
		r := resp.(*kmsg.ApiVersionsResponse)
		if corr != 42 || r.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Fatalf("v%d: correlation id %d, error %d; want 42, %d", version, corr, r.ErrorCode, kerr.UnsupportedVersion.Code)
		}
		want := []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: 0, MaxVersion: 4}}
		if !slices.EqualFunc(r.ApiKeys, want, func(a, b kmsg.ApiVersionsResponseApiKey) bool {
			return a.ApiKey == b.ApiKey && a.MinVersion == b.MinVersion && a.MaxVersion == b.MaxVersion
		}) {
			t.Fatalf("v%d: keys %+v, want %+v", version, r.ApiKeys, want)
		}
		c.apiVersions(43) // the retry works on the same connection
	}
}

// TestApiVersionsInvalidSoftwareName: v3+ names outside Kafka's pattern get
// INVALID_REQUEST and no keys.
func TestApiVersionsInvalidSoftwareName(t *testing.T) {
	ts := startServer(t, ServerConfig{}, testTable())
	c := dial(t, ts.addr)
	for i, name := range []string{"", "has space", "-leading", "trailing."} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = name, "1.0"
		c.send(requestFrame(req, int32(i), ""))
		_, resp := c.readResponse(kmsg.ApiVersions, 3)
		if r := resp.(*kmsg.ApiVersionsResponse); r.ErrorCode != kerr.InvalidRequest.Code || len(r.ApiKeys) != 0 {
			t.Fatalf("name %q: error %d with %d keys, want INVALID_REQUEST and none", name, r.ErrorCode, len(r.ApiKeys))
		}
	}
	for v := int16(0); v <= 4; v++ {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "librdkafka", "2.0.2"
		c.send(requestFrame(req, 100, "rdkafka"))
		if _, resp := c.readResponse(kmsg.ApiVersions, v); resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
			t.Fatalf("v%d: error %d", v, resp.(*kmsg.ApiVersionsResponse).ErrorCode)
		}
	}
}
