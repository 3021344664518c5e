package engine

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine/batch"
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

// TestSendFileMovesSegmentBytes sends a Read's file range over a real TCP
// socket, through sendfile(2) for OS files and the copying fallback for
// in-memory files, and compares the bytes.
func TestSendFileMovesSegmentBytes(t *testing.T) {
	for name, fsys := range map[string]vfs.FS{"os-sendfile": vfs.NewOS(), "mem-copy": vfs.NewMem()} {
		t.Run(name, func(t *testing.T) {
			dir := "/data"
			if name == "os-sendfile" {
				dir = t.TempDir()
			}
			l, _, err := Open(fsys, dir+"/t-0", TopicPartition{"t", 0}, testOptions(nil), OpenOptions{})
			mustNotErr(t, err)
			defer l.Close()
			for i := 0; i < 40; i++ {
				_, err := l.Append(makeBatch(t, batch.CompressionNone, i, 10, 1000, 1), 0)
				mustNotErr(t, err)
			}
			r, err := l.Read(5, 1<<20, l.LogEndOffset(), true)
			mustNotErr(t, err)
			defer r.Release()
			want, err := r.Bytes()
			mustNotErr(t, err)
			if _, ok := r.Slice.File.(vfs.Fder); ok != (name == "os-sendfile") {
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
			n, err := SendFile(server, r.Slice.File, r.Slice.Position, r.Slice.Size)
			mustNotErr(t, err)
			sf1, cp1 := SendFileStats()
			if name == "os-sendfile" && (sf1-sf0 != n || cp1 != cp0) {
				t.Fatalf("sendfile moved %d and copying %d of %d bytes", sf1-sf0, cp1-cp0, n)
			}
			if name == "mem-copy" && (cp1-cp0 != n || sf1 != sf0) {
				t.Fatalf("in-memory file: copied %d, sendfile %d of %d bytes", cp1-cp0, sf1-sf0, n)
			}
			server.CloseWrite()
			if n != r.Slice.Size {
				t.Fatalf("sent %d of %d bytes", n, r.Slice.Size)
			}
			select {
			case b := <-got:
				if !bytes.Equal(b, want) {
					t.Fatalf("received %d bytes that differ from the %d read", len(b), len(want))
				}
			case <-time.After(10 * time.Second):
				t.Fatal("receiver timed out")
			}
		})
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
