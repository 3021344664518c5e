package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// A subscriber that takes long (a slow disk under the broker's partition
// creation) holds up neither the quorum driver, which goes on answering,
// nor anything but the commit that waits for it; every subscriber sees a
// chain of transitions, each from the image it saw last; and a commit
// returns only once the subscribers have its image.
func TestSlowSubscriberDoesNotHoldTheDriver(t *testing.T) {
	c := open(t, vfs.NewMem())
	defer c.Close()
	release := make(chan struct{})
	var releaseOnce sync.Once
	// Before Close: a failing test must not leave the subscriber stuck.
	defer releaseOnce.Do(func() { close(release) })
	var mu sync.Mutex
	var last *Image
	var broken []string
	check := func(name string) func(old, new *Image) {
		return func(old, new *Image) {
			mu.Lock()
			if old != last && !(old == nil && last == nil) {
				broken = append(broken, fmt.Sprintf("%s: transition from offset %d, last saw %d", name, offsetOf(old), offsetOf(last)))
			}
			if name == "first" {
				last = new
			}
			mu.Unlock()
			if new.Topic("slow") != nil && (old == nil || old.Topic("slow") == nil) {
				<-release
			}
		}
	}
	if err := c.Subscribe(check("first")); err != nil {
		t.Fatal(err)
	}
	created := make(chan error, 1)
	go func() {
		_, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: "slow", NumPartitions: 1, ReplicationFactor: 1}}, false)
		created <- err
	}()
	// The driver answers while the subscriber is stuck.
	deadline := time.Now().Add(10 * time.Second)
	for c.Image().Topic("slow") == nil {
		if time.Now().After(deadline) {
			t.Fatal("topic never applied")
		}
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.q.driver.Status(ctx); err != nil {
		t.Fatalf("the quorum driver does not answer while a subscriber is slow: %v", err)
	}
	select {
	case err := <-created:
		t.Fatalf("CreateTopics returned (%v) before the subscribers had its image", err)
	default:
	}
	releaseOnce.Do(func() { close(release) })
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("CreateTopics did not return once the subscriber went on")
	}
	for i := range 20 {
		if _, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: fmt.Sprintf("t%d", i), NumPartitions: 1, ReplicationFactor: 1}}, false); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(broken) > 0 {
		t.Fatalf("broken transitions: %v", broken)
	}
	if last.Topic("t19") == nil {
		t.Fatal("the subscriber did not see the last change")
	}
}

func offsetOf(im *Image) int64 {
	if im == nil {
		return -1
	}
	return int64(im.Offset)
}

// A subscriber that subscribes right after OpenController starts from the
// image the log replays to, not an earlier one the publisher has not
// caught up from (the broker's replicas take a topic missing from the
// first image for a new one).
func TestSubscribeAfterRestartStartsFromReplayedImage(t *testing.T) {
	fsys := vfs.NewMem()
	c := open(t, fsys)
	for i := range 50 {
		if _, err := c.CreateTopics(context.Background(), []CreateTopic{{Name: fmt.Sprintf("t%d", i), NumPartitions: 1, ReplicationFactor: 1}}, false); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	for range 5 {
		c = open(t, fsys)
		var first *Image
		if err := c.Subscribe(func(old, new *Image) {
			if old == nil {
				first = new
			}
		}); err != nil {
			t.Fatal(err)
		}
		if first == nil || first.Topic("t49") == nil {
			t.Fatalf("the first image a subscriber got lacks the replayed topics")
		}
		c.Close()
	}
}
