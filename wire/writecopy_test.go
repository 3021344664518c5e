package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// recordingConn is a net.Conn that keeps what is written and the size of
// each write.
type recordingConn struct {
	net.Conn
	buf    bytes.Buffer
	writes []int
}

func (c *recordingConn) Write(b []byte) (int, error) {
	c.writes = append(c.writes, len(b))
	return c.buf.Write(b)
}
func (c *recordingConn) SetWriteDeadline(time.Time) error { return nil }

// WriteCopy sends the same bytes as Write, byte and file chunks mixed, in
// writes of at most the copy buffer, full ones but the last: a TLS
// connection then sends full records, however small the chunks.
func TestWriteCopyMatchesAppendTo(t *testing.T) {
	f, err := vfs.NewOS().Create(t.TempDir() + "/00000000000000000000.log")
	mustNotErr(t, err)
	defer f.Close()
	data := make([]byte, 300<<10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	_, err = f.WriteAt(data, 0)
	mustNotErr(t, err)
	var chunks []Chunk
	for i := range 40 {
		chunks = append(chunks, Chunk{Bytes: bytes.Repeat([]byte{byte(i)}, i*3)})
		chunks = append(chunks, Chunk{File: FileSlice{File: f, Position: int64(i * 7000), Size: int64(i * 311)}})
	}
	chunks = append(chunks, Chunk{File: FileSlice{File: f, Position: 0, Size: int64(len(data))}}, Chunk{Bytes: []byte("end")})
	want, err := AppendTo(nil, chunks)
	mustNotErr(t, err)

	var c recordingConn
	n, err := WriteCopy(&c, chunks, time.Second)
	if err != nil || n != int64(len(want)) || !bytes.Equal(c.buf.Bytes(), want) {
		t.Fatalf("WriteCopy: %d bytes, %v; same bytes: %v", n, err, bytes.Equal(c.buf.Bytes(), want))
	}
	for i, w := range c.writes {
		if w > 64<<10 || (i < len(c.writes)-1 && w != 64<<10) {
			t.Fatalf("write %d of %d is %d bytes: %v", i, len(c.writes), w, c.writes)
		}
	}

	// A file shorter than its chunk says is an error, not a short frame
	// passed off as whole.
	var short recordingConn
	_, err = WriteCopy(&short, []Chunk{{File: FileSlice{File: f, Position: int64(len(data)) - 10, Size: 100}}}, time.Second)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("chunk past the end of the file: %v", err)
	}
}
