package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// Frame errors. Each names a reason a connection is closed; they are
// wrapped with the details (%w) and logged, never sent to the peer: the
// Kafka protocol has no way to answer a frame that could not be read.
var (
	// ErrFrameSize: a size prefix <= 0 or above the limit in force.
	ErrFrameSize = errors.New("wire: request frame size out of range")
	// ErrFrameStalled: a frame started but its next bytes did not arrive
	// in time (FrameReader.FrameTimeout, or the caller's own deadline).
	ErrFrameStalled = errors.New("wire: request frame stalled")
	// ErrFrameDeadline: a frame's body was not read whole within
	// FrameReader.FrameTimeout of its admission.
	ErrFrameDeadline = errors.New("wire: request frame not complete within its deadline")
	// ErrFrameTruncated: the connection ended in the middle of a frame.
	ErrFrameTruncated = errors.New("wire: connection closed mid-frame")
	// ErrIdle: no frame for FrameReader.IdleTimeout while nothing was in
	// flight (connections.max.idle.ms).
	ErrIdle = errors.New("wire: connection idle")
	// ErrFirstRequestTimeout: a new connection sent no complete frame
	// before FrameReader.FirstDeadline.
	ErrFirstRequestTimeout = errors.New("wire: no request within the first-request timeout")
	// ErrTLSOnPlaintext: the first bytes were a TLS handshake, not a
	// Kafka frame.
	ErrTLSOnPlaintext = errors.New("wire: TLS handshake received on a plaintext listener: the client is configured for SSL (security.protocol) but this listener is PLAINTEXT")
	// ErrHTTPOnKafka: the first bytes were an HTTP request.
	ErrHTTPOnKafka = errors.New("wire: HTTP request received on a Kafka listener: the client speaks HTTP (the broker's HTTP endpoints are on http.listen)")
)

// FrameReader reads size-prefixed Kafka frames, requests and responses
// alike:
//
//	size:int32 (big endian, > 0)  body:[size]byte
//
// With SetReadDeadline set it owns the read deadlines of its connection:
// IdleTimeout before the first byte of a frame, FrameTimeout between the
// bytes of the size prefix, FrameTimeout for the whole body from the
// moment it is admitted (not re-armed by each read: a client trickling
// one byte at a time cannot keep a frame, and its share of the request
// budget, for longer), and none past FirstDeadline until the first frame
// is read. Without it the caller sets the connection's deadlines, and a
// timeout before a frame starts is returned as the reader gave it.
type FrameReader struct {
	R io.Reader
	// SetReadDeadline arms the connection's read deadline; nil when the
	// caller owns the deadlines (peer links) or in fuzz tests that read
	// from memory.
	SetReadDeadline func(time.Time) error
	IdleTimeout     time.Duration
	FrameTimeout    time.Duration
	// Busy reports requests in flight: a client waiting for a slow
	// response (a long poll, a rebalance) is not idle.
	Busy func() bool
	// FirstDeadline, when not zero, caps every read deadline: the first
	// request must be read whole by then. The owner clears it once a
	// frame is read, and pushes it back by the time spent waiting for
	// the request budget.
	FirstDeadline time.Time
	// Progress, when not nil, is told how far the frame being read has
	// come, for a watch over the request budget.
	Progress *FrameProgress

	sizeBuf [4]byte
}

// FrameProgress is how far a connection's current frame has come. The
// reader goroutine writes it; a budget watch reads it.
type FrameProgress struct {
	// InFrame: the first byte of a size prefix arrived and the frame is
	// not read whole yet.
	InFrame atomic.Bool
	// BodyStart is when the body began to be read after the frame was
	// admitted to the request budget (UnixNano), 0 when no body is being
	// read; Size and Got are its length and the bytes read so far.
	BodyStart atomic.Int64
	Size, Got atomic.Int64
}

// CheckKeyFunc vets a request frame as soon as its api key is known,
// before the rest of the body is read: an unknown key, a key not allowed
// yet, or a size above the key's cap ends the connection without
// buffering more.
type CheckKeyFunc func(key int16, size int32) error

// AdmitFunc is called once a frame's size is known to be within the cap,
// before its body is read or any memory is committed for it: it waits
// for the request budget. An error ends the connection.
type AdmitFunc func(size int32) error

// growFromBytes is where a frame read without an admission starts its
// buffer, and the size up to which it is allocated whole.
const growFromBytes = 64 << 10

// ReadFrame returns the next frame body. limit is the frame cap in force
// (smaller before authentication): a size prefix above it is refused
// before anything of the body is read. checkKey, when not nil, sees the
// api key of a request frame as soon as it arrives, and a frame too short
// to hold one is refused.
//
// Memory: a frame that admit let in is allocated whole at once (the
// budget counted it all; growing it would hold up to 1.5 times the frame
// during the last copy), with exactly the announced length and capacity.
// Without admit, memory follows the bytes that arrive, not the size
// announced: the buffer grows fourfold from 64 KiB to exactly the frame's
// size, so a peer announcing 16 MiB and sending nothing holds 64 KiB, and
// a multi-MB response is not copied and cleared many times over.
func (fr *FrameReader) ReadFrame(limit int32, checkKey CheckKeyFunc, admit AdmitFunc) ([]byte, error) {
	return fr.readFrame(limit, checkKey, admit, nil)
}

// ReadFrameInto is ReadFrame without a check or an admission, into buf's
// memory when the frame fits there: a follower reads every fetch response
// into one buffer per connection instead of a fresh one that the kernel
// must fault in and the garbage collector must clear (at 100 MB/s that
// cost more CPU than the copy).
func (fr *FrameReader) ReadFrameInto(limit int32, buf []byte) ([]byte, error) {
	return fr.readFrame(limit, nil, nil, buf)
}

func (fr *FrameReader) readFrame(limit int32, checkKey CheckKeyFunc, admit AdmitFunc, into []byte) ([]byte, error) {
	got := 0
	for got < 4 {
		if got == 0 {
			fr.arm(fr.IdleTimeout)
		} else {
			fr.arm(fr.FrameTimeout)
		}
		n, err := fr.R.Read(fr.sizeBuf[got:])
		got += n
		if got > 0 && fr.Progress != nil {
			fr.Progress.InFrame.Store(true)
		}
		if got == 4 || err == nil {
			continue
		}
		if got == 0 {
			if IsTimeout(err) && fr.SetReadDeadline != nil {
				if !fr.FirstDeadline.IsZero() && !time.Now().Before(fr.FirstDeadline) {
					return nil, ErrFirstRequestTimeout
				}
				if fr.Busy != nil && fr.Busy() {
					continue
				}
				return nil, ErrIdle
			}
			return nil, err // io.EOF: the peer closed between frames
		}
		return nil, midFrameError(err, "size prefix")
	}

	size := int32(binary.BigEndian.Uint32(fr.sizeBuf[:]))
	if size <= 0 || size > limit {
		if err := ForeignProtocol(fr.sizeBuf); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %d, limit %d", ErrFrameSize, size, limit)
	}
	if admit != nil {
		if err := admit(size); err != nil {
			return nil, err
		}
	}
	// One deadline for the whole body, from admission.
	start := time.Now()
	fr.arm(fr.FrameTimeout)
	if p := fr.Progress; p != nil {
		p.Size.Store(int64(size))
		p.Got.Store(0)
		p.BodyStart.Store(start.UnixNano())
		defer func() {
			p.BodyStart.Store(0)
			p.InFrame.Store(false)
		}()
	}
	n := int(size)
	var buf []byte
	switch {
	case n <= cap(into):
		buf = into[:0]
	case admit != nil:
		// A fresh large allocation is untouched memory, so the resident
		// size still follows the bytes that actually arrive.
		buf = make([]byte, 0, n)
	default:
		buf = make([]byte, 0, min(n, growFromBytes))
	}
	keyChecked := checkKey == nil
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(4*cap(buf), n))
			copy(grown, buf)
			buf = grown
		}
		m, err := fr.R.Read(buf[len(buf):min(cap(buf), n)])
		buf = buf[:len(buf)+m]
		if fr.Progress != nil {
			fr.Progress.Got.Store(int64(len(buf)))
		}
		if !keyChecked && len(buf) >= 2 {
			keyChecked = true
			if cerr := checkKey(int16(binary.BigEndian.Uint16(buf)), size); cerr != nil {
				return nil, cerr
			}
		}
		if len(buf) == n || err == nil {
			continue
		}
		if IsTimeout(err) && fr.SetReadDeadline != nil {
			return nil, fmt.Errorf("%w: %d of %d bytes in %v", ErrFrameDeadline, len(buf), n, time.Since(start).Round(time.Millisecond))
		}
		return nil, midFrameError(err, fmt.Sprintf("body (%d of %d bytes)", len(buf), n))
	}
	if !keyChecked {
		// A one-byte frame: too short to hold an api key.
		return nil, fmt.Errorf("%w: frame of %d byte", ErrMalformedHeader, n)
	}
	return buf, nil
}

func (fr *FrameReader) arm(d time.Duration) {
	if fr.SetReadDeadline == nil {
		return
	}
	deadline := time.Now().Add(d)
	if !fr.FirstDeadline.IsZero() && fr.FirstDeadline.Before(deadline) {
		deadline = fr.FirstDeadline
	}
	fr.SetReadDeadline(deadline)
}

// WriteFrame writes frame, whose first 4 bytes are left for the size,
// after putting the size there.
func WriteFrame(w io.Writer, frame []byte) error {
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	_, err := w.Write(frame)
	return err
}

// ForeignProtocol recognises a size prefix that is the start of another
// protocol: a TLS record (a client configured for SSL on a plaintext
// listener) or an HTTP request. Both read as sizes far above any frame
// cap, and saying what they are is worth more than the number.
func ForeignProtocol(prefix [4]byte) error {
	// A TLS record: content type handshake (22) or alert (21), version
	// 3.x (SSL 3.0 to TLS 1.3 all say 3.1-3.4 in the record layer).
	if (prefix[0] == 22 || prefix[0] == 21) && prefix[1] == 3 && prefix[2] <= 4 {
		return ErrTLSOnPlaintext
	}
	for _, m := range []string{"GET ", "POST", "PUT ", "HEAD", "DELE", "OPTI", "PATC", "CONN", "PRI ", "TRAC"} {
		if string(prefix[:]) == m {
			return ErrHTTPOnKafka
		}
	}
	return nil
}

func midFrameError(err error, where string) error {
	switch {
	case IsTimeout(err):
		return fmt.Errorf("%w: %s", ErrFrameStalled, where)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s", ErrFrameTruncated, where)
	default:
		return fmt.Errorf("wire: reading %s: %w", where, err)
	}
}

// IsTimeout says whether err is a deadline that passed.
func IsTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
