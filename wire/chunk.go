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

// WriteCopy is Write for a connection that cannot take sendfile(2): a TLS
// connection, which must encrypt every byte. It copies the chunks, file
// ranges read with ReadAt, into a pooled buffer of 64 KiB and writes the
// buffer whenever it fills, so a response goes out in full-sized TLS
// records whatever its chunks, and memory per response stays at one
// buffer however large the fetch. Kafka copies the same way under TLS.
func WriteCopy(nc net.Conn, chunks []Chunk, timeout time.Duration) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := (*bp)[:0]
	var written int64
	flush := func() error {
		if len(buf) == 0 {
			return nil
		}
		nc.SetWriteDeadline(time.Now().Add(timeout))
		n, err := nc.Write(buf)
		written += int64(n)
		copyCounter.Add(int64(n))
		buf = buf[:0]
		return err
	}
	for _, c := range chunks {
		if c.File.File == nil {
			for b := c.Bytes; len(b) > 0; {
				m := copy(buf[len(buf):cap(buf)], b)
				buf, b = buf[:len(buf)+m], b[m:]
				if len(buf) == cap(buf) {
					if err := flush(); err != nil {
						return written, err
					}
				}
			}
			continue
		}
		off, n := c.File.Position, c.File.Size
		for n > 0 {
			want := min(int64(cap(buf)-len(buf)), n)
			m, err := c.File.File.ReadAt(buf[len(buf):len(buf)+int(want)], off)
			buf = buf[:len(buf)+m]
			off += int64(m)
			n -= int64(m)
			if n > 0 && m < int(want) {
				if err == nil || errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return written, fmt.Errorf("file chunk (%d of %d bytes left): %w", n, c.File.Size, err)
			}
			if len(buf) == cap(buf) {
				if err := flush(); err != nil {
					return written, err
				}
			}
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
