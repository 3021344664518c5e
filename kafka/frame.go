package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// frameReader reads size-prefixed request frames:
//
//	size:int32 (big endian, > 0)  body:[size]byte
//
// It owns the read deadlines of its connection: IdleTimeout before the
// first byte of a frame, FrameTimeout between the bytes of the size
// prefix, FrameTimeout for the whole body from the moment it is admitted
// (not re-armed by each read: a client trickling one byte at a time
// cannot keep a frame, and its share of the request budget, for longer),
// and none past firstDeadline until the first frame is read.
type frameReader struct {
	r io.Reader
	// setReadDeadline arms the connection's read deadline; a no-op in
	// fuzz tests that read from memory.
	setReadDeadline func(time.Time) error
	idleTimeout     time.Duration
	frameTimeout    time.Duration
	// busy reports requests in flight: a client waiting for a slow
	// response (a long poll, a rebalance) is not idle.
	busy func() bool
	// firstDeadline, when not zero, caps every read deadline: the first
	// request must be read whole by then (FirstRequestTimeout). The
	// connection clears it once a frame is read, and pushes it back by
	// the time spent waiting for the request budget.
	firstDeadline time.Time
	// progress, when not nil, is told how far the frame being read has
	// come, for the Server's watch over the request budget.
	progress *frameProgress

	sizeBuf [4]byte
}

// frameProgress is how far a connection's current frame has come. The
// reader goroutine writes it; the Server's budget watch reads it.
type frameProgress struct {
	// inFrame: the first byte of a size prefix arrived and the frame
	// is not read whole yet.
	inFrame atomic.Bool
	// bodyStart is when the body began to be read after the frame was
	// admitted to the request budget (UnixNano), 0 when no body is being
	// read; size and got are its length and the bytes read so far.
	bodyStart atomic.Int64
	size, got atomic.Int64
}

// checkKeyFunc vets a frame as soon as its api key is known, before the
// rest of the body is read: an unknown key, a key not allowed yet, or a
// size above the key's cap ends the connection without buffering more.
type checkKeyFunc func(key int16, size int32) error

// admitFunc is called once a frame's size is known to be within the cap,
// before its body is read or any memory is committed for it: it waits
// for the request budget. An error ends the connection.
type admitFunc func(size int32) error

// readFrame returns the next frame body. limit is the frame cap in force
// (smaller before authentication): a size prefix above it is refused
// before anything of the body is read. The returned slice has exactly the
// announced length and capacity.
func (fr *frameReader) readFrame(limit int32, checkKey checkKeyFunc, admit admitFunc) ([]byte, error) {
	got := 0
	for got < 4 {
		if got == 0 {
			fr.arm(fr.idleTimeout)
		} else {
			fr.arm(fr.frameTimeout)
		}
		n, err := fr.r.Read(fr.sizeBuf[got:])
		got += n
		if got > 0 && fr.progress != nil {
			fr.progress.inFrame.Store(true)
		}
		if got == 4 || err == nil {
			continue
		}
		if got == 0 {
			if isTimeout(err) {
				if !fr.firstDeadline.IsZero() && !time.Now().Before(fr.firstDeadline) {
					return nil, ErrFirstRequestTimeout
				}
				if fr.busy != nil && fr.busy() {
					continue
				}
				return nil, ErrIdle
			}
			return nil, err // io.EOF: the client closed between frames
		}
		return nil, midFrameError(err, "size prefix")
	}

	size := int32(binary.BigEndian.Uint32(fr.sizeBuf[:]))
	if size <= 0 || size > limit {
		if err := foreignProtocol(fr.sizeBuf); err != nil {
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
	fr.arm(fr.frameTimeout)
	if p := fr.progress; p != nil {
		p.size.Store(int64(size))
		p.got.Store(0)
		p.bodyStart.Store(start.UnixNano())
		defer func() {
			p.bodyStart.Store(0)
			p.inFrame.Store(false)
		}()
	}
	// The budget admitted the whole frame, so the buffer is allocated at
	// once: growing it as bytes arrive would hold up to 1.5 times the
	// frame during the last copy, past what the budget counts. A fresh
	// large allocation is untouched memory, so the resident size still
	// follows the bytes that actually arrive.
	n := int(size)
	buf := make([]byte, 0, n)
	keyChecked := false
	for len(buf) < n {
		m, err := fr.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if fr.progress != nil {
			fr.progress.got.Store(int64(len(buf)))
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
		if isTimeout(err) {
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

func (fr *frameReader) arm(d time.Duration) {
	if fr.setReadDeadline == nil {
		return
	}
	deadline := time.Now().Add(d)
	if !fr.firstDeadline.IsZero() && fr.firstDeadline.Before(deadline) {
		deadline = fr.firstDeadline
	}
	fr.setReadDeadline(deadline)
}

// foreignProtocol recognises a size prefix that is the start of another
// protocol: a TLS record (a client configured for SSL on a plaintext
// listener) or an HTTP request. Both read as sizes far above any frame
// cap, and saying what they are is worth more than the number.
func foreignProtocol(prefix [4]byte) error {
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
	case isTimeout(err):
		return fmt.Errorf("%w: %s", ErrFrameStalled, where)
	case errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %s", ErrFrameTruncated, where)
	default:
		return fmt.Errorf("kafka: reading %s: %w", where, err)
	}
}

func isTimeout(err error) bool { return errors.Is(err, os.ErrDeadlineExceeded) }
