//go:build !faultfs

package broker

import (
	"log/slog"

	"github.com/wren-broker/wren/internal/vfs"
)

// serveFS is the file system `wren serve` runs on: nil, the OS. A build
// with the faultfs tag (servefs_faultfs.go) can slow its syncs down for
// measurements; the release build has no such hook.
func serveFS(*slog.Logger) (vfs.FS, error) { return nil, nil }
