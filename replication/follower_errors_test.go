package replication

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/wren-broker/wren/engine"
)

// A follower's truncation that fails because the node is stopping (the
// log closed under it) or because leadership moved on meanwhile is an
// expected part of a stop, not a disk problem: DEBUG, where it was ERROR
// on every concurrent stop of a cluster. Anything else stays ERROR.
func TestFollowerErrorLevel(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want slog.Level
	}{
		{errNotFollowing, slog.LevelDebug},
		{fmt.Errorf("truncate t-0: %w", engine.ErrClosed), slog.LevelDebug},
		{engine.ErrClosed, slog.LevelDebug},
		{fmt.Errorf("truncate: %w", engine.ErrLogDirFailed), slog.LevelError},
		{errors.New("write: input/output error"), slog.LevelError},
	} {
		if got := followerErrorLevel(tc.err); got != tc.want {
			t.Errorf("%v: level %v, want %v", tc.err, got, tc.want)
		}
	}
}
