package wire

import (
	"net"
	"sync"
)

// BatchConn is the TCP connection under a TLS connection: while batching
// (between Batch and Flush) it gathers the writes the TLS layer makes, one
// per record of at most 16 KiB, into a pooled buffer of batchBytes (eight
// records) and sends the buffer in one write system call when the next
// record does not fit, instead of one per record. Outside a batch every
// write goes straight through (the handshake, alerts, a KeyUpdate answered
// by the reader), so nothing waits in the buffer unless a response is
// being written, and Flush sends it at the response's end.
//
// crypto/tls makes its records one at a time under its own lock, but
// Flush comes from outside it, and the reader may answer a KeyUpdate in
// the middle of the writer's batch (it then goes out in order with the
// batch): a mutex keeps the buffer and the order of writes whole. A write
// that fails sticks: it fails Flush and every later Write, and the caller
// closes the connection.
type BatchConn struct {
	net.Conn
	mu       sync.Mutex
	batching bool
	buf      *[]byte
	err      error
}

// batchBytes is what a batch gathers before one write: eight full TLS
// records (16 KiB of data and at most 256 bytes of header, tag and
// padding each, whatever the suite), large enough that the system call
// costs little per byte, small enough that a connection blocked on a slow
// reader holds little.
const batchBytes = 8 * (16<<10 + 256)

var batchBufs = sync.Pool{New: func() any { b := make([]byte, 0, batchBytes); return &b }}

// NewBatchConn wraps nc, not batching.
func NewBatchConn(nc net.Conn) *BatchConn { return &BatchConn{Conn: nc} }

// Batch starts gathering writes until Flush.
func (c *BatchConn) Batch() {
	c.mu.Lock()
	c.batching = true
	c.mu.Unlock()
}

// Flush writes what the batch gathered, ends the batch and returns the
// batch's first write error.
func (c *BatchConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.flushLocked()
	c.batching = false
	if c.buf != nil {
		*c.buf = (*c.buf)[:0]
		batchBufs.Put(c.buf)
		c.buf = nil
	}
	return err
}

// Write gathers b while batching, else writes it.
func (c *BatchConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if !c.batching {
		return c.Conn.Write(b)
	}
	if c.buf == nil {
		c.buf = batchBufs.Get().(*[]byte)
	}
	if len(*c.buf)+len(b) > cap(*c.buf) {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
		if len(b) > cap(*c.buf) {
			return c.Conn.Write(b)
		}
	}
	*c.buf = append(*c.buf, b...)
	return len(b), nil
}

func (c *BatchConn) flushLocked() error {
	if c.err != nil {
		return c.err
	}
	if c.buf == nil || len(*c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(*c.buf)
	*c.buf = (*c.buf)[:0]
	if err != nil {
		c.err = err
	}
	return err
}
