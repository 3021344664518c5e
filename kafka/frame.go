package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// frameInitialBytes is the first buffer a frame body gets. The buffer then
// doubles as bytes actually arrive, capped at the announced size, so a
// client that announces 100 MiB and sends 10 bytes costs 16 KiB, not
// 100 MiB: memory follows the bytes received, not the bytes promised.
const frameInitialBytes = 16 << 10

// frameReader reads size-prefixed request frames:
//
//	size:int32 (big endian, > 0)  body:[size]byte
//
// It owns the read deadlines of its connection: IdleTimeout before the
// first byte of a frame, FrameTimeout between later reads.
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

	sizeBuf [4]byte
}

// checkKeyFunc vets a frame as soon as its api key is known, before the
// rest of the body is read: an unknown key, a key not allowed yet, or a
// size above the key's cap ends the connection without buffering more.
type checkKeyFunc func(key int16, size int32) error

// readFrame returns the next frame body. limit is the frame cap in force
// (smaller before authentication). The returned slice has exactly the
// announced length and capacity.
func (fr *frameReader) readFrame(limit int32, checkKey checkKeyFunc) ([]byte, error) {
	got := 0
	for got < 4 {
		if got == 0 {
			fr.arm(fr.idleTimeout)
		} else {
			fr.arm(fr.frameTimeout)
		}
		n, err := fr.r.Read(fr.sizeBuf[got:])
		got += n
		if got == 4 || err == nil {
			continue
		}
		if got == 0 {
			if isTimeout(err) {
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
		return nil, fmt.Errorf("%w: %d, limit %d", ErrFrameSize, size, limit)
	}
	n := int(size)
	buf := make([]byte, 0, min(n, frameInitialBytes))
	keyChecked := false
	for len(buf) < n {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(n, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		fr.arm(fr.frameTimeout)
		m, err := fr.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if !keyChecked && len(buf) >= 2 {
			keyChecked = true
			if cerr := checkKey(int16(binary.BigEndian.Uint16(buf)), size); cerr != nil {
				return nil, cerr
			}
		}
		if len(buf) == n || err == nil {
			continue
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
	if fr.setReadDeadline != nil {
		fr.setReadDeadline(time.Now().Add(d))
	}
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
