package peer

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// deadPeerAfter makes the kernel close c once bytes sent on it stay
// unacknowledged for d (TCP_USER_TIMEOUT). A peer cut off by the network
// (a dead link or switch drops packets, no FIN or RST arrives) otherwise
// holds the connection open for the kernel's full retransmission budget,
// about 15 minutes: small writes keep landing in the socket buffer, and
// after the network heals the next retransmission may be seconds away,
// with the backoff it built up meanwhile. Closed after d, the connection
// is dialed again with the layer's own backoff, and the first dial
// after the heal succeeds. Kafka gets the same from
// controller.quorum.request.timeout.ms, by closing a connection whose
// request timed out. A peer that is slow, not gone, keeps acknowledging:
// its kernel answers whether or not the process keeps up.
func deadPeerAfter(c net.Conn, d time.Duration) {
	tc, ok := c.(*net.TCPConn)
	if !ok || d <= 0 {
		return
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return
	}
	// Best effort: without it only the retransmission budget applies.
	rc.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT, int(d.Milliseconds()))
	})
}
