package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/wren-broker/wren/internal/vfs"
)

// SendFile writes n bytes of f starting at off to w. When f has a kernel
// descriptor and w is a TCP (or unix) socket, the bytes move with
// sendfile(2) from the page cache to the socket without entering user
// space; otherwise they are copied through a pooled buffer (in-memory
// files, TLS connections, test pipes).
//
// It returns the bytes written. A short count comes with an error.
func SendFile(w io.Writer, f vfs.File, off, n int64) (int64, error) {
	written, err := sendFile(w, f, off, n)
	return written, err
}

// SendFileStats counts bytes moved by sendfile(2) and by copying, for
// metrics: a rising copy count on plaintext listeners means sendfile is
// being refused.
func SendFileStats() (sendfileBytes, copiedBytes int64) {
	return sendfileCounter.Load(), copyCounter.Load()
}

var sendfileCounter, copyCounter atomic.Int64

func sendFile(w io.Writer, f vfs.File, off, n int64) (int64, error) {
	if n <= 0 {
		return 0, nil
	}
	if fd, ok := f.(vfs.Fder); ok {
		if sc, ok := w.(syscall.Conn); ok && isSocket(w) {
			written, err, handled := sendfile(sc, int(fd.Fd()), off, n)
			if handled {
				return written, err
			}
			off += written
			n -= written
			w1, err := copyFile(w, f, off, n)
			return written + w1, err
		}
	}
	return copyFile(w, f, off, n)
}

func isSocket(w io.Writer) bool {
	switch w.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// sendfile runs sendfile(2) on the connection's descriptor, waiting in the
// runtime's poller when the socket buffer is full. handled is false when
// the kernel refuses sendfile for this pair (EINVAL, ENOSYS, EOPNOTSUPP)
// before writing; the caller then copies the rest.
func sendfile(sc syscall.Conn, srcFd int, off, n int64) (written int64, err error, handled bool) {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err, false
	}
	handled = true
	var serr error
	werr := rc.Write(func(dst uintptr) bool {
		for n > 0 {
			chunk := n
			if chunk > 1<<30 {
				chunk = 1 << 30
			}
			o := off
			m, e := unix.Sendfile(int(dst), srcFd, &o, int(chunk))
			if m > 0 {
				sendfileCounter.Add(int64(m))
				written += int64(m)
				off += int64(m)
				n -= int64(m)
			}
			switch {
			case e == unix.EAGAIN:
				return false // wait until writable
			case e == unix.EINTR:
				continue
			case e == unix.EINVAL || e == unix.ENOSYS || e == unix.EOPNOTSUPP:
				if written == 0 {
					handled = false
				} else {
					serr = e
				}
				return true
			case e != nil:
				serr = e
				return true
			case m == 0:
				// The file is shorter than promised (truncated under us).
				serr = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if serr == nil {
		serr = werr
	}
	if serr != nil && handled {
		return written, fmt.Errorf("wire: sendfile: %w", serr), true
	}
	return written, nil, handled
}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

func copyFile(w io.Writer, f vfs.File, off, n int64) (int64, error) {
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	buf := *bp
	var written int64
	for n > 0 {
		chunk := int64(len(buf))
		if chunk > n {
			chunk = n
		}
		m, err := f.ReadAt(buf[:chunk], off)
		if m > 0 {
			wm, werr := w.Write(buf[:m])
			written += int64(wm)
			copyCounter.Add(int64(wm))
			if werr != nil {
				return written, werr
			}
			off += int64(m)
			n -= int64(m)
		}
		if err != nil {
			if errors.Is(err, io.EOF) && n > 0 {
				return written, io.ErrUnexpectedEOF
			}
			if !errors.Is(err, io.EOF) {
				return written, err
			}
		}
		if m == 0 && err == nil {
			return written, io.ErrUnexpectedEOF
		}
	}
	return written, nil
}
