package sdnotify

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func TestNotifyWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if err := Notify(Ready); err != nil {
		t.Fatalf("Notify without NOTIFY_SOCKET: %v", err)
	}
}

// TestNotify sends to a socket by path and to one in the abstract
// namespace.
func TestNotify(t *testing.T) {
	for _, name := range []string{
		filepath.Join(t.TempDir(), "notify"),
		fmt.Sprintf("@wren-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano()),
	} {
		sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("NOTIFY_SOCKET", name)
		if err := Notify(Stopping); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sock.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		n, err := sock.Read(buf)
		sock.Close()
		if err != nil || string(buf[:n]) != Stopping {
			t.Fatalf("%s: got %q, %v", name, buf[:n], err)
		}
	}
}

func TestNotifyNoListener(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent"))
	if err := Notify(Ready); err == nil {
		t.Fatal("Notify to an absent socket succeeded")
	}
}

func TestWatchdogInterval(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		usec, pid string
		want      time.Duration
	}{
		{"", "", 0},
		{"junk", "", 0},
		{"0", "", 0},
		{"30000000", "", 15 * time.Second},
		{"30000000", self, 15 * time.Second},
		{"30000000", "1", 0},
	} {
		t.Setenv("WATCHDOG_USEC", tc.usec)
		t.Setenv("WATCHDOG_PID", tc.pid)
		if got := WatchdogInterval(); got != tc.want {
			t.Errorf("WATCHDOG_USEC=%q WATCHDOG_PID=%q: %v, want %v", tc.usec, tc.pid, got, tc.want)
		}
	}
}
