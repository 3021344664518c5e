//go:build faultfs

package broker

import (
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// serveFS, in a build with the faultfs tag, gives `wren serve` a slow disk
// for measurements (scripts/failover.sh): with WREN_FAULTFS_SYNC_DELAY set
// to a duration ("100ms"), every fsync, fdatasync and directory fsync of
// the node waits that long first (vfs.SlowFS). SIGUSR1 turns the delay on
// and SIGUSR2 off, so a script can slow the disk of whichever node became
// the controller without restarting it; WREN_FAULTFS_SYNC_DELAY_OFF=1
// starts with the delay off. Without WREN_FAULTFS_SYNC_DELAY the node runs
// on the OS file system as a release build does.
func serveFS(logger *slog.Logger) (vfs.FS, error) {
	v := os.Getenv("WREN_FAULTFS_SYNC_DELAY")
	if v == "" {
		return nil, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return nil, fmt.Errorf("broker: WREN_FAULTFS_SYNC_DELAY %q: want a positive duration such as 100ms", v)
	}
	s := vfs.NewSlowFS(vfs.NewOS())
	if os.Getenv("WREN_FAULTFS_SYNC_DELAY_OFF") != "1" {
		s.SetSyncDelay(d)
	}
	logger.Warn("faultfs build: syncs are slowed down", "delay", d.String(), "on", s.SyncDelay() > 0)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for got := range sig {
			on := got == syscall.SIGUSR1
			if on {
				s.SetSyncDelay(d)
			} else {
				s.SetSyncDelay(0)
			}
			logger.Warn("faultfs build: sync delay switched", "delay", d.String(), "on", on)
		}
	}()
	return s, nil
}
