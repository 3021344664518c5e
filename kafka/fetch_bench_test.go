package kafka

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/testcert"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// fetchBenchFile is the segment the fetch benchmarks serve from: 16 MiB
// of a real file, in the page cache once written.
const fetchBenchFile = 16 << 20

// benchFetch serves Fetch v12 responses whose records are perBytes of a
// real file (successive ranges, as a consumer reads a segment) on a
// plaintext or TLS listener, and reads them with one request in flight, as
// a consumer does from one broker. It reports MB/s of responses and the
// process's CPU seconds per GiB (server and client both: the client's
// share, decryption, is the same on either side of a server change).
func benchFetch(b *testing.B, useTLS bool, perBytes int64) {
	f, err := vfs.NewOS().Create(filepath.Join(b.TempDir(), "00000000000000000000.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	data := make([]byte, fetchBenchFile)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		b.Fatal(err)
	}
	var pos int64
	s, err := newServer(ServerConfig{Logger: slog.New(slog.DiscardHandler)}, nil, testTable(apiEntry{
		Key: kmsg.Fetch, Min: 4, Max: 12, MaxRequestBytes: smallRequestBytes,
		Handle: func(s *Server, req *Request) (Pending, error) {
			if pos+perBytes > fetchBenchFile {
				pos = 0
			}
			slice := wire.FileSlice{File: f, Position: pos, Size: perBytes}
			pos += perBytes
			chunks := wire.EncodeFetchResponse(req.Header.ApiVersion, 0, 0, 0, []wire.FetchTopic{{
				Topic: "bench", Partitions: []wire.FetchPartition{{HighWatermark: 1, LastStableOffset: 1, Records: slice}},
			}})
			return RespondSpliced(&SplicedResponse{Chunks: chunks}), nil
		},
	}))
	if err != nil {
		b.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var spec Listener
	var client *tls.Config
	if useTLS {
		ca := testcert.NewCA(b, "wren bench CA")
		// As the broker's listeners: full-sized records from the start.
		spec.TLS = &tls.Config{Certificates: []tls.Certificate{ca.TLSCertificate(b, "127.0.0.1")}, DynamicRecordSizingDisabled: true}
		client = &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	}
	go s.ServeListener(ln, spec)
	b.Cleanup(func() { s.Close() })

	var nc net.Conn
	nc, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	if useTLS {
		nc = tls.Client(nc, client)
	}
	defer nc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	frame := requestFrame(req, 1, "bench")
	want := int64(-1)
	var size [4]byte
	body := make([]byte, perBytes+4096)
	fetch := func() int64 {
		nc.SetDeadline(time.Now().Add(waitTimeout))
		if _, err := nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(nc, size[:]); err != nil {
			b.Fatal(err)
		}
		n := int64(binary.BigEndian.Uint32(size[:]))
		if n > int64(len(body)) || want >= 0 && n != want {
			b.Fatalf("response of %d bytes", n)
		}
		if _, err := io.ReadFull(nc, body[:n]); err != nil {
			b.Fatal(err)
		}
		return n
	}
	want = fetch() // handshake and warm-up
	b.SetBytes(want + 4)
	b.ReportAllocs()
	var r0, r1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
	b.ResetTimer()
	for range b.N {
		fetch()
	}
	b.StopTimer()
	syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()+r1.Stime.Nano()-r0.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(want+4)/(1<<30)), "cpu-s/GiB")
}

// BenchmarkFetch serves 1 MiB fetches (a partition's default
// max.partition.fetch.bytes) over plaintext, where the records go out with
// sendfile(2), and over TLS, where they are read and encrypted: the goal
// (issue 20) is TLS at 0.7x or more of plaintext.
func BenchmarkFetch(b *testing.B) {
	b.Run("plaintext", func(b *testing.B) { benchFetch(b, false, 1<<20) })
	b.Run("tls", func(b *testing.B) { benchFetch(b, true, 1<<20) })
}
