package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/wren-broker/wren/internal/sdnotify"
)

// readyPollInterval is how often a broker that started but is not ready
// (a failed log dir, no controller yet) looks again before telling systemd
// READY=1.
const readyPollInterval = 100 * time.Millisecond

// notifySystemd tells systemd (Type=notify) READY=1 once /readyz would
// pass, then sends WATCHDOG=1 keep-alives while the client listener
// accepts, until ctx ends. Without $NOTIFY_SOCKET it does nothing. It
// returns when ctx ends.
func notifySystemd(ctx context.Context, b *Broker, logger *slog.Logger) {
	if !waitReady(ctx, b) {
		return
	}
	if err := sdnotify.Notify(sdnotify.Ready); err != nil {
		logger.Warn("could not tell systemd READY=1", "err", err)
	}
	interval := sdnotify.WatchdogInterval()
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A broker whose accept loop died is not alive for its clients:
		// stop the keep-alives and let systemd restart it.
		if !b.server.Listening() {
			logger.Error("client listener stopped; no more watchdog keep-alives")
			return
		}
		if err := sdnotify.Notify(sdnotify.Watchdog); err != nil {
			logger.Warn("could not send systemd a watchdog keep-alive", "err", err)
		}
	}
}

// waitReady polls Ready until it passes (true) or ctx ends (false); the
// poll is bounded by ctx, which SIGTERM ends, and by systemd's
// TimeoutStartSec, which kills a service that never becomes ready.
func waitReady(ctx context.Context, b *Broker) bool {
	t := time.NewTicker(readyPollInterval)
	defer t.Stop()
	for b.Ready() != nil {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}
