//go:build invariants

package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// TestAppendInvariantsFire: with the invariants tag, an append checks the
// log's offsets when it ends.
func TestAppendInvariantsFire(t *testing.T) {
	for _, tc := range []struct {
		name     string
		breakLog func(l *Log)
		want     string
	}{
		{"log start past the end", func(l *Log) { l.logStartOffset = 1000 }, "log start offset 1000, durable offset 3, log end offset 6"},
		{"durable past the end", func(l *Log) { l.commit.Reset(1000) }, "log start offset 0, durable offset 1000, log end offset 6"},
		{"a stale lock-free view", func(l *Log) { l.logStartOffsetView.Store(2) }, "the lock-free views say 2 and 6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := openTestLog(t, vfs.NewMem(), testOptions(nil), OpenOptions{})
			if _, err := l.Append(makeBatch(t, batch.CompressionNone, 0, 3, 10, 0), 0); err != nil {
				t.Fatal(err)
			}
			l.mu.Lock()
			tc.breakLog(l)
			l.mu.Unlock()
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("no panic, want one with %q", tc.want)
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, tc.want) {
					t.Fatalf("panic %q, want one with %q", msg, tc.want)
				}
			}()
			_, _ = l.Append(makeBatch(t, batch.CompressionNone, 1, 3, 10, 0), 0)
		})
	}
}
