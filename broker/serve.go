package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/internal/sdnotify"
)

// ServeFile is `wren serve`: load the config file (or, with no path, the
// built-in single-node defaults), set up logging as it says, and serve
// until ctx ends (SIGINT or SIGTERM), then shut down cleanly: first a
// controlled shutdown that moves its partition leaderships to other
// replicas (bounded by controlledShutdownTimeout), then close. Under
// systemd (Type=notify) it sends READY=1 once /readyz would pass,
// WATCHDOG=1 keep-alives when WatchdogSec asks for them, and STOPPING=1
// when the shutdown begins.
// logLevel, when not empty, overrides logging.level (`wren serve
// --log-level`, WREN_LOG_LEVEL). nodeID, unless config.NoNode, selects
// this node's entry in a file shared by the whole cluster (`wren serve
// --node-id`, WREN_NODE_ID); without it a shared file is matched by this
// host's addresses (config/node.go).
func ServeFile(ctx context.Context, configPath, logLevel string, nodeID int32) error {
	cfg, err := config.LoadNode(configPath, nodeID)
	if err != nil {
		return err
	}
	level := cfg.LoggingLevel
	if logLevel != "" {
		level = logLevel
	}
	logger, err := newLogger(os.Stderr, level, cfg.LoggingFormat)
	if err != nil {
		return err
	}
	applyMemoryLimit(cfg, logger)
	fsys, err := serveFS(logger)
	if err != nil {
		return err
	}
	b, err := Start(cfg, Options{Logger: logger, FS: fsys})
	if err != nil {
		return err
	}
	notified := make(chan struct{})
	nctx, stopNotify := context.WithCancel(ctx)
	go func() {
		defer close(notified)
		notifySystemd(nctx, b, logger)
	}()
	var fatal error
	select {
	case <-ctx.Done():
	case fatal = <-b.Fatal():
	}
	if fatal != nil {
		// Not this node's to hand over: another process holds its id.
		logger.Error("stopping", "err", fatal)
		stopNotify()
		<-notified
		return errors.Join(fatal, b.Close())
	}
	logger.Info("shutting down")
	if err := sdnotify.Notify(sdnotify.Stopping); err != nil {
		logger.Warn("could not tell systemd STOPPING=1", "err", err)
	}
	stopNotify()
	<-notified
	// Leadership moves before the listener closes, so clients find the
	// new leaders while this node still answers (controlled shutdown).
	sctx, cancel := context.WithTimeout(context.Background(), controlledShutdownTimeout)
	began := time.Now()
	if err := b.ControlledShutdown(sctx); err != nil {
		logger.Warn("controlled shutdown incomplete, closing anyway", "err", err)
	} else {
		logger.Info("controlled shutdown: leadership moved", "took", time.Since(began).Round(time.Millisecond).String())
	}
	cancel()
	return b.Close()
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("broker: logging.level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
