package wire

import (
	"bytes"
	"io"
	"math/rand"
	"net"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// loopbackPair returns a connected TCP pair on a free loopback port.
func loopbackPair(t testing.TB) (client, server *net.TCPConn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return c.(*net.TCPConn), r.c.(*net.TCPConn)
	case <-time.After(10 * time.Second):
		t.Fatal("accept timed out")
	}
	return nil, nil
}

// TestSendFileMovesSegmentBytes sends a file range over a real TCP
// socket, through sendfile(2) for OS files and the copying fallback for
// in-memory files, and compares the bytes.
func TestSendFileMovesSegmentBytes(t *testing.T) {
	data := make([]byte, 300<<10)
	rand.New(rand.NewSource(1)).Read(data)
	for name, fsys := range map[string]vfs.FS{"os-sendfile": vfs.NewOS(), "mem-copy": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := "/data"
			if name == "os-sendfile" {
				dir = t.TempDir()
			} else {
				mustNotErr(t, fsys.MkdirAll(dir, 0o755))
			}
			f, err := fsys.Create(dir + "/00000000000000000000.log")
			mustNotErr(t, err)
			defer f.Close()
			_, err = f.WriteAt(data, 0)
			mustNotErr(t, err)
			r := FileSlice{File: f, Position: 1234, Size: 200 << 10}
			want := data[r.Position : r.Position+r.Size]
			if _, ok := r.File.(vfs.Fder); ok != (name == "os-sendfile") {
				t.Fatalf("file descriptor ability: %v", ok)
			}
			client, server := loopbackPair(t)
			defer client.Close()
			defer server.Close()
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(client)
				got <- b
			}()
			sf0, cp0 := SendFileStats()
			n, err := SendFile(server, r.File, r.Position, r.Size)
			mustNotErr(t, err)
			sf1, cp1 := SendFileStats()
			if name == "os-sendfile" && (sf1-sf0 != n || cp1 != cp0) {
				t.Fatalf("sendfile moved %d and copying %d of %d bytes", sf1-sf0, cp1-cp0, n)
			}
			if name == "mem-copy" && (cp1-cp0 != n || sf1 != sf0) {
				t.Fatalf("in-memory file: copied %d, sendfile %d of %d bytes", cp1-cp0, sf1-sf0, n)
			}
			server.CloseWrite()
			if n != r.Size {
				t.Fatalf("sent %d of %d bytes", n, r.Size)
			}
			select {
			case b := <-got:
				if !bytes.Equal(b, want) {
					t.Fatalf("received %d bytes that differ from the %d sent", len(b), len(want))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("receiver timed out")
			}
		})
	}
}

func mustNotErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSendFileToNonSocketCopies: a writer that is not a socket (a TLS
// connection, a buffer) gets the copying path, and a range past the end of
// the file is an error, not a short success.
func TestSendFileToNonSocketCopies(t *testing.T) {
	fsys := vfs.NewOS()
	f, err := fsys.Create(t.TempDir() + "/f")
	mustNotErr(t, err)
	defer f.Close()
	data := bytes.Repeat([]byte("0123456789"), 20000)
	_, err = f.WriteAt(data, 0)
	mustNotErr(t, err)
	var buf bytes.Buffer
	n, err := SendFile(&buf, f, 7, 150000)
	if err != nil || n != 150000 || !bytes.Equal(buf.Bytes(), data[7:150007]) {
		t.Fatalf("copy: %d %v", n, err)
	}
	buf.Reset()
	if n, err := SendFile(&buf, f, 199990, 100); err == nil {
		t.Fatalf("range past the end: %d bytes, no error", n)
	}
	client, server := loopbackPair(t)
	defer client.Close()
	defer server.Close()
	go io.Copy(io.Discard, client)
	if n, err := SendFile(server, f, 199990, 100); err == nil {
		t.Fatalf("sendfile past the end: %d bytes, no error", n)
	}
}

// BenchmarkSendFile moves 1 MiB ranges of a 64 MiB file to a loopback TCP
// socket with sendfile(2), against read+write through a buffer.
func BenchmarkSendFile(b *testing.B) {
	f, err := vfs.NewOS().Create(b.TempDir() + "/00000000000000000000.log")
	mustNotErr(b, err)
	defer f.Close()
	const fileBytes = 64 << 20
	data := make([]byte, fileBytes)
	rand.New(rand.NewSource(1)).Read(data)
	_, err = f.WriteAt(data, 0)
	mustNotErr(b, err)
	for _, mode := range []string{"sendfile", "read+write"} {
		b.Run(mode, func(b *testing.B) {
			client, server := loopbackPair(b)
			defer client.Close()
			defer server.Close()
			done := make(chan struct{})
			go func() { io.Copy(io.Discard, client); close(done) }()
			b.SetBytes(1 << 20)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				off := int64(i*7919) % (fileBytes / 2)
				if mode == "sendfile" {
					_, err = SendFile(server, f, off, 1<<20)
				} else {
					_, err = copyFile(server, f, off, 1<<20)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			server.CloseWrite()
			<-done
		})
	}
}
