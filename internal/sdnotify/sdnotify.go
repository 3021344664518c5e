// Package sdnotify speaks systemd's service notification protocol
// (sd_notify(3)): one datagram per state change to the unix socket named
// by $NOTIFY_SOCKET, with no library and nothing to do when the variable
// is unset (wren not started by systemd, or with Type=simple).
//
// A socket name starting with '@' is in the abstract namespace; Go's
// unix socket addresses already treat a leading '@' that way.
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// The states wren sends.
const (
	// Ready: start-up is finished and the service serves.
	Ready = "READY=1"
	// Stopping: a controlled shutdown began.
	Stopping = "STOPPING=1"
	// Watchdog: a keep-alive, due every WatchdogInterval.
	Watchdog = "WATCHDOG=1"
)

// Notify sends state to $NOTIFY_SOCKET. Without the variable it does
// nothing and returns nil.
func Notify(state string) error {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("sdnotify: %s: %w", name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sdnotify: %s: %w", name, err)
	}
	return nil
}

// WatchdogInterval is how often to send Watchdog: half of $WATCHDOG_USEC,
// as sd_watchdog_enabled(3) advises, or 0 when systemd expects no
// keep-alives (the variable unset or invalid, or $WATCHDOG_PID naming
// another process).
func WatchdogInterval() time.Duration {
	usec, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || usec <= 0 {
		return 0
	}
	if pid := os.Getenv("WATCHDOG_PID"); pid != "" && pid != strconv.Itoa(os.Getpid()) {
		return 0
	}
	return time.Duration(usec) * time.Microsecond / 2
}
