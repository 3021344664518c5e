package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// TestOffsetMap cross-checks the map against a Go map, with a table small
// enough that probe chains wrap around.
func TestOffsetMap(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewSource(seed))
	for _, slots := range []int64{2, 3, 10, 97, 1024} {
		m, err := newOffsetMap(slots * offsetMapEntryBytes)
		mustNotErr(t, err)
		if m.slots != int(slots) || m.maxEntries != int(slots*9/10) {
			t.Fatalf("%d slots: got %d slots, %d max entries", slots, m.slots, m.maxEntries)
		}
		for round := 0; round < 3; round++ {
			model := map[string]int64{}
			for off := int64(0); ; off++ {
				k := []byte(fmt.Sprintf("k%d", rng.Intn(int(slots)*2)))
				h := hashKey(k)
				if _, known := model[string(k)]; !known && !m.room(1) {
					break
				}
				m.put(&h, off)
				model[string(k)] = off
				if off > 10*slots {
					break
				}
			}
			if m.entries != len(model) || m.entries > m.maxEntries {
				t.Fatalf("%d slots: %d entries, model %d, max %d", slots, m.entries, len(model), m.maxEntries)
			}
			for k, off := range model {
				h := hashKey([]byte(k))
				if got, ok := m.get(&h); !ok || got != off {
					t.Fatalf("%d slots: get %s = %d %v, want %d", slots, k, got, ok, off)
				}
			}
			h := hashKey([]byte("absent"))
			if _, ok := m.get(&h); ok {
				t.Fatalf("%d slots: found a key never put", slots)
			}
			m.clear()
			if m.entries != 0 || m.latestOffset != -1 {
				t.Fatal("clear left entries")
			}
			for k := range model {
				h := hashKey([]byte(k))
				if _, ok := m.get(&h); ok {
					t.Fatal("clear left a key")
				}
			}
		}
	}
	if _, err := newOffsetMap(offsetMapEntryBytes); !errors.Is(err, ErrCleanerBufferTooSmall) {
		t.Fatalf("one-slot map: %v", err)
	}
}

// fakeTime is a monotonic clock that only sleeping moves, besides the
// test's own advances.
type fakeTime struct {
	now   time.Time
	slept time.Duration
}

func (f *fakeTime) Now() time.Time { return f.now }
func (f *fakeTime) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.now = f.now.Add(d)
	f.slept += d
	return nil
}

// TestThrottler: I/O reported faster than the rate is slowed to it, I/O
// slower than the rate is not, and a cancelled context ends a sleep.
func TestThrottler(t *testing.T) {
	for _, tc := range []struct {
		name        string
		rate        float64
		chunk       int64
		chunkTime   time.Duration
		chunks      int
		wantElapsed time.Duration
	}{
		// 20 MiB at 1 MiB/s, read at 2 MiB/s: about 20 s.
		{"fast I/O is slowed", 1 << 20, 64 << 10, 31250 * time.Microsecond, 320, 20 * time.Second},
		// 1 MiB at 10 MiB/s, read at 1 MiB/s: no sleep.
		{"slow I/O is not", 10 << 20, 64 << 10, 62500 * time.Microsecond, 16, time.Second},
		{"no limit", 0, 1 << 20, time.Millisecond, 100, 100 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := &fakeTime{now: time.Unix(1000, 0)}
			th := NewThrottler(tc.rate, ft.Now, ft.Sleep)
			start := ft.now
			for i := 0; i < tc.chunks; i++ {
				ft.now = ft.now.Add(tc.chunkTime)
				mustNotErr(t, th.maybeThrottle(context.Background(), tc.chunk))
			}
			elapsed := ft.now.Sub(start)
			// Within 5%: what passed since the last check is not slowed
			// yet, as in Kafka.
			if d := elapsed - tc.wantElapsed; d < -tc.wantElapsed/20 || d > tc.wantElapsed/20 {
				t.Fatalf("%d bytes took %v (slept %v), want about %v", int64(tc.chunks)*tc.chunk, elapsed, ft.slept, tc.wantElapsed)
			}
		})
	}
	ft := &fakeTime{now: time.Unix(1000, 0)}
	th := NewThrottler(1, ft.Now, ft.Sleep)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ft.now = ft.now.Add(time.Second)
	if err := th.maybeThrottle(ctx, 1<<20); !errors.Is(err, context.Canceled) {
		t.Fatalf("throttle with a cancelled context: %v", err)
	}
	var nilThrottler *Throttler
	mustNotErr(t, nilThrottler.maybeThrottle(context.Background(), 1<<30))
}
