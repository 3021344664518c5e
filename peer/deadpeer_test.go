package peer

import (
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDeadPeerAfter: the option the kernel closes a silent peer's
// connection by is set on both ends, in milliseconds.
func TestDeadPeerAfter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dialed, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer dialed.Close()
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	for _, c := range []net.Conn{dialed, accepted} {
		deadPeerAfter(c, 1500*time.Millisecond)
		rc, err := c.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var got int
		var gerr error
		if err := rc.Control(func(fd uintptr) {
			got, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT)
		}); err != nil || gerr != nil {
			t.Fatal(err, gerr)
		}
		if got != 1500 {
			t.Fatalf("TCP_USER_TIMEOUT %d ms, want 1500", got)
		}
	}
}
