package broker

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSystemdNotify runs the wren binary as systemd would with Type=notify
// and WatchdogSec: NOTIFY_SOCKET names an abstract unix datagram socket the
// test listens on, WATCHDOG_USEC asks for keep-alives. READY=1 must come
// once the client port accepts, WATCHDOG=1 every half interval after it,
// and STOPPING=1 on SIGTERM, before a clean exit.
func TestSystemdNotify(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the wren binary")
	}
	dir := t.TempDir()
	bin := wrenBinary(t)
	name := fmt.Sprintf("@wren-notify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	sock, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	msgs := make(chan string, 1024)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := sock.Read(buf)
			if err != nil {
				close(msgs)
				return
			}
			msgs <- string(buf[:n])
		}
	}()

	conf, addr := writeSingleNodeConfig(t, dir, filepath.Join(dir, "data"), "", `[logging]
level = "warn"
`)
	cmd := diesWithTest(exec.Command(bin, "serve", "--config", conf))
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+name, "WATCHDOG_USEC=200000")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// exited is closed when the process is gone; exitErr is then set.
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()

	// next returns the next message, failing after a deadline or, until
	// SIGTERM (after which exiting is expected, and may win the race with
	// the reader of the socket), when the process exits.
	signaled := false
	next := func(what string) string {
		t.Helper()
		exitedEarly := exited
		if signaled {
			exitedEarly = nil
		}
		select {
		case m, ok := <-msgs:
			if !ok {
				t.Fatalf("notify socket closed while waiting for %s", what)
			}
			return m
		case <-exitedEarly:
			t.Fatalf("wren exited (%v) while the test waited for %s", exitErr, what)
		case <-time.After(30 * time.Second):
			t.Fatalf("no %s within 30 s", what)
		}
		return ""
	}
	if m := next("READY=1"); m != "READY=1" {
		t.Fatalf("first message %q, want READY=1", m)
	}
	// READY=1 promises a client listener that already accepts.
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("READY=1 came but %s does not accept: %v", addr, err)
	}
	c.Close()
	for i := range 3 {
		if m := next("WATCHDOG=1"); m != "WATCHDOG=1" {
			t.Fatalf("message %d after READY=1: %q, want WATCHDOG=1", i, m)
		}
	}
	signaled = true
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		m := next("STOPPING=1")
		if m == "STOPPING=1" {
			break
		}
		if m != "WATCHDOG=1" {
			t.Fatalf("unexpected message %q before STOPPING=1", m)
		}
	}
	select {
	case <-exited:
		if exitErr != nil {
			t.Fatalf("wren exited with %v after SIGTERM", exitErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("wren did not exit within 30 s of SIGTERM")
	}
	// Nothing but keep-alives may follow STOPPING=1. The process has
	// exited, so whatever it sent is already queued on the socket.
	for {
		select {
		case m := <-msgs:
			if m != "WATCHDOG=1" {
				t.Fatalf("message %q after STOPPING=1", m)
			}
			continue
		default:
		}
		break
	}
}
