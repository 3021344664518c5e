package peer

import (
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// replicaBenchFile is the segment the replica benchmark serves from: 16
// MiB of a real file, in the page cache once written.
const replicaBenchFile = 16 << 20

// benchReplicaFetch has a follower fetch perBytes of a real file at a
// time (successive ranges, as it reads a segment) from a leader over a
// replica connection, plaintext (sendfile) or mutual TLS, one request in
// flight as a fetcher has. It reports MB/s of responses and the process's
// CPU seconds per GiB (leader and follower both: the follower's share,
// decryption, is the same on either side of a leader change).
func benchReplicaFetch(b *testing.B, useTLS bool, perBytes int64) {
	dir := b.TempDir()
	data := make([]byte, replicaBenchFile)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "seg"), data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := vfs.NewOS().Open(filepath.Join(dir, "seg"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	lns, voters := listeners(b, 2)
	var tlsOf [2]*TLS
	if useTLS {
		certs := filepath.Join(dir, "certs")
		if err := InitCerts(CertsOptions{Dir: certs, Voters: voters}); err != nil {
			b.Fatal(err)
		}
		for i := range tlsOf {
			id := election.NodeID(i + 1)
			m := &swappableTLS{}
			m.load(b, filepath.Join(certs, NodeCertFile(id)), filepath.Join(certs, CAFile))
			tlsOf[i] = m.config()
		}
	}
	logger := slog.New(slog.DiscardHandler)
	var pos int64
	leader, err := start(Config{ID: 1, Voters: voters, Listener: lns[0], Logger: logger, TLS: tlsOf[0]},
		func(_ election.NodeID, _ uint64, req kmsg.Request) *wire.Body {
			if pos+perBytes > replicaBenchFile {
				pos = 0
			}
			slice := wire.FileSlice{File: f, Position: pos, Size: perBytes}
			pos += perBytes
			return &wire.Body{Chunks: []wire.Chunk{{Bytes: binary.BigEndian.AppendUint64(nil, uint64(slice.Position))}, {File: slice}}}
		})
	if err != nil {
		b.Fatal(err)
	}
	defer leader.Close()
	follower, err := start(Config{ID: 2, Voters: voters, Listener: lns[1], Logger: logger, TLS: tlsOf[1]})
	if err != nil {
		b.Fatal(err)
	}
	defer follower.Close()
	rc, err := follower.DialReplica(1)
	if err != nil {
		b.Fatal(err)
	}
	defer rc.Close()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.ReplicaID = 2
	fetch := func() int64 {
		resp, err := rc.RoundTrip(req, time.Now().Add(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		if int64(len(resp)) != 8+perBytes {
			b.Fatalf("response of %d bytes, want %d", len(resp), 8+perBytes)
		}
		return int64(len(resp))
	}
	n := fetch() // handshake and warm-up
	b.SetBytes(n)
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
	b.ReportMetric(cpu.Seconds()/(float64(b.N)*float64(n)/(1<<30)), "cpu-s/GiB")
}

// BenchmarkReplicaFetch serves 1 MiB replica fetches (a partition's
// default replica.fetch.max.bytes) over plaintext, where the records go
// out with sendfile(2), and over mutual TLS, where they are read,
// encrypted and gathered into eight-record writes.
func BenchmarkReplicaFetch(b *testing.B) {
	b.Run("plaintext", func(b *testing.B) { benchReplicaFetch(b, false, 1<<20) })
	b.Run("tls", func(b *testing.B) { benchReplicaFetch(b, true, 1<<20) })
}
