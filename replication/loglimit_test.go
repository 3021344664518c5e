package replication

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wren-broker/wren/engine"
)

// A follower whose appends fail for one persistent cause (a full disk,
// too few file descriptors) logs one WARN line per cause per 10 s, with
// the count of the lines it held back, instead of one per partition per
// fetch round; another cause gets its own line; a replica whose
// leadership moved on logs at DEBUG only.
func TestFollowerAppendFailedRateLimited(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	var buf bytes.Buffer
	fm := newFetcherManager(2, FetchConfig{}, slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	fm.appendFailures = newCauseLimiter(followerLogInterval, clk.now)
	fl := func(i int32) *followed {
		return &followed{p: &Partition{tp: engine.TopicPartition{Topic: "t", Partition: i}}}
	}
	lines := func() []string {
		s := strings.TrimSpace(buf.String())
		buf.Reset()
		if s == "" {
			return nil
		}
		return strings.Split(s, "\n")
	}
	full := fmt.Errorf("append t-0: %w", engine.ErrNoSpace)
	// Rounds of a whole second over 100 partitions: 9 rounds stay within
	// the interval of the first line.
	for round := 0; round < 10; round++ {
		for i := int32(0); i < 100; i++ {
			fm.appendFailed(fl(i), full)
		}
		if round < 9 {
			clk.advance(time.Second)
		}
	}
	got := lines()
	if len(got) != 1 || !strings.Contains(got[0], "cause=\"no space\"") || !strings.Contains(got[0], "suppressed_since_last=0") {
		t.Fatalf("1000 failed appends over 9 s: %d lines %q, want 1 of cause no space", len(got), got)
	}
	// Another cause is not held back by the first.
	fm.appendFailed(fl(0), fmt.Errorf("open: %w", syscall.EMFILE))
	if got := lines(); len(got) != 1 || !strings.Contains(got[0], "too many open files") {
		t.Fatalf("a second cause: %q, want its own line", got)
	}
	// Moved on, or the log closed: DEBUG, nothing at INFO and above.
	fm.appendFailed(fl(0), errNotFollowing)
	fm.appendFailed(fl(0), engine.ErrClosed)
	if got := lines(); len(got) != 0 {
		t.Fatalf("expected failures logged at WARN: %q", got)
	}
	// Once the interval has passed: one line with the count held back.
	clk.advance(time.Second)
	fm.appendFailed(fl(7), full)
	got = lines()
	if len(got) != 1 || !strings.Contains(got[0], "suppressed_since_last=999") {
		t.Fatalf("after 10 s: %q, want one line with suppressed_since_last=999", got)
	}
}

func TestAppendFailureCause(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("a: %w", engine.ErrNoSpace), "no space"},
		{engine.ErrLogDirFull, "no space"},
		{fmt.Errorf("write: %w", syscall.ENOSPC), "no space"},
		{fmt.Errorf("x: %w", engine.ErrTooManyOpenFiles), "too many open files"},
		{fmt.Errorf("open: %w", syscall.EMFILE), "too many open files"},
		{fmt.Errorf("x: %w", engine.ErrLogDirFailed), "log dir failed"},
		{fmt.Errorf("fsync: %w", syscall.EIO), "i/o error"},
		{errors.New("something else"), "other"},
	} {
		if got := appendFailureCause(tc.err); got != tc.want {
			t.Errorf("%v: cause %q, want %q", tc.err, got, tc.want)
		}
	}
}
