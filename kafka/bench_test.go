package kafka

import (
	"bufio"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// benchServer serves an empty Metadata response: the cost measured is the
// server's framing, dispatch, decode and encode over loopback TCP.
func benchServer(b *testing.B) string {
	s, err := newServer(ServerConfig{Logger: slog.New(slog.DiscardHandler)}, nil, testTable(metadataRow(
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

func benchRoundTrips(b *testing.B, inFlight int) {
	nc, err := net.Dial("tcp", benchServer(b))
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
func BenchmarkRoundTrip(b *testing.B) { benchRoundTrips(b, 1) }

// BenchmarkPipelined: 32 requests in flight on one connection.
func BenchmarkPipelined(b *testing.B) { benchRoundTrips(b, 32) }
