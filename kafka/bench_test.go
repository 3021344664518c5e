package kafka

import (
	"bufio"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/ops"
)

// benchServer serves an empty Metadata response: the cost measured is the
// server's framing, dispatch, decode and encode over loopback TCP.
func benchServer(b *testing.B, o Observer) string {
	s, err := newServer(ServerConfig{Logger: slog.New(slog.DiscardHandler), Observer: o}, nil, testTable(metadataRow(
		func(s *Server, req *Request) (Pending, error) { return Respond(metadataResponse(req)), nil })))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	b.Cleanup(func() { s.Close() })
	return ln.Addr().String()
}

func benchRoundTrips(b *testing.B, inFlight int, o Observer) {
	nc, err := net.Dial("tcp", benchServer(b, o))
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	req := metadataRequest(12)
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("bench")}}
	fr := requestFrame(req, 1, "bench")
	br := bufio.NewReader(nc)
	var size [4]byte
	buf := make([]byte, 1024)
	read := func() {
		if _, err := io.ReadFull(br, size[:]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, buf[:binary.BigEndian.Uint32(size[:])]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(fr)))
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < inFlight {
			if _, err := nc.Write(fr); err != nil {
				b.Fatal(err)
			}
			sent++
		}
		read()
		got++
	}
}

// BenchmarkRoundTrip: one request at a time.
func BenchmarkRoundTrip(b *testing.B) { benchRoundTrips(b, 1, nil) }

// BenchmarkPipelined: 32 requests in flight on one connection.
func BenchmarkPipelined(b *testing.B) { benchRoundTrips(b, 32, nil) }

// BenchmarkPipelinedMetrics is BenchmarkPipelined with the broker's
// metrics observing every request: the difference is what metrics cost on
// the request path.
func BenchmarkPipelinedMetrics(b *testing.B) { benchRoundTrips(b, 32, ops.NewMetrics()) }

// BenchmarkObserverRequestDone is the metrics' share of one request alone:
// a counter, two byte counters and a latency histogram.
func BenchmarkObserverRequestDone(b *testing.B) {
	m := ops.NewMetrics()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.RequestDone(int16(kmsg.Produce), 1000, 100, time.Millisecond)
		}
	})
}
