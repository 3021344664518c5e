package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/wren-broker/wren/config"
)

// ServeFile is `wren serve`: load the config file (or, with no path, the
// built-in single-node defaults), set up logging as it says, and serve
// until ctx ends (SIGINT or SIGTERM), then shut down cleanly.
func ServeFile(ctx context.Context, configPath string) error {
	cfg := config.Default()
	if configPath != "" {
		var err error
		if cfg, err = config.Load(configPath); err != nil {
			return err
		}
	}
	logger, err := newLogger(os.Stderr, cfg.LoggingLevel, cfg.LoggingFormat)
	if err != nil {
		return err
	}
	return Run(ctx, cfg, Options{Logger: logger})
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
