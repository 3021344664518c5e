package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Chunk is a run of bytes or a file range; exactly one is set: File.File
// non-nil means a file chunk, sent with SendFile (sendfile(2) on a
// plaintext TCP socket).
type Chunk struct {
	Bytes []byte
	File  FileSlice
}

// Size is the chunk's length on the wire.
func (c Chunk) Size() int64 {
	if c.File.File != nil {
		return c.File.Size
	}
	return int64(len(c.Bytes))
}

// ErrBadChunk: a file chunk that also holds bytes, or a negative range.
var ErrBadChunk = errors.New("wire: bad chunk")

// Size checks chunks and returns their total length on the wire.
func Size(chunks []Chunk) (int64, error) {
	var total int64
	for i, c := range chunks {
		if c.File.File != nil && (c.Bytes != nil || c.File.Position < 0 || c.File.Size < 0) {
			return 0, fmt.Errorf("%w: chunk %d: file chunk with bytes or range %d+%d", ErrBadChunk, i, c.File.Position, c.File.Size)
		}
		total += c.Size()
	}
	return total, nil
}

// Write writes chunks to nc in order, setting a write deadline of timeout
// from now before each system call group: runs of byte chunks in one
// writev, file chunks with SendFile. It returns the bytes written.
// After an error part of the chunks may be out, so the stream is unusable.
func Write(nc net.Conn, chunks []Chunk, timeout time.Duration) (int64, error) {
	var written int64
	var pending net.Buffers
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		nc.SetWriteDeadline(time.Now().Add(timeout))
		n, err := pending.WriteTo(nc) // consumes pending
		written += n
		return err
	}
	for _, c := range chunks {
		if c.File.File == nil {
			if len(c.Bytes) > 0 {
				pending = append(pending, c.Bytes)
			}
			continue
		}
		if err := flush(); err != nil {
			return written, err
		}
		if c.File.Size == 0 {
			continue
		}
		nc.SetWriteDeadline(time.Now().Add(timeout))
		n, err := SendFile(nc, c.File.File, c.File.Position, c.File.Size)
		written += n
		if err == nil && n != c.File.Size {
			err = io.ErrShortWrite
		}
		if err != nil {
			return written, fmt.Errorf("file chunk (%d of %d bytes): %w", n, c.File.Size, err)
		}
	}
	return written, flush()
}

// AppendTo appends the chunks' bytes to b, reading file chunks, for a
// caller that needs the body in memory (tests, a transport without
// sendfile).
func AppendTo(b []byte, chunks []Chunk) ([]byte, error) {
	for _, c := range chunks {
		if c.File.File == nil {
			b = append(b, c.Bytes...)
			continue
		}
		at := len(b)
		b = append(b, make([]byte, c.File.Size)...)
		n, err := c.File.File.ReadAt(b[at:], c.File.Position)
		if err == io.EOF && int64(n) == c.File.Size {
			err = nil
		}
		if err != nil {
			return b[:at+n], err
		}
	}
	return b, nil
}

// Body is a response body given as chunks, and what lets their files go.
type Body struct {
	Chunks []Chunk
	// Release, if set, is called exactly once after the chunks were
	// written or dropped (connection closed): it lets the segments go.
	Release func()
}

// Done calls Release, once however often it is called; nil does nothing.
func (b *Body) Done() {
	if b != nil && b.Release != nil {
		r := b.Release
		b.Release = nil
		r()
	}
}
