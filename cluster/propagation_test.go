package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/election"
)

// imageWithBrokers is an image with brokers 1, 2, 3 registered, those in
// fenced fenced.
func imageWithBrokers(t *testing.T, fenced ...int32) *Image {
	t.Helper()
	im := emptyImage()
	var err error
	offset := uint64(0)
	for id := int32(1); id <= 3; id++ {
		offset++
		if im, err = im.apply(offset, Record{Kind: KindBrokerRegistration, BrokerRegistration: &BrokerRegistrationRecord{BrokerID: id}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range fenced {
		offset++
		if im, err = im.apply(offset, Record{Kind: KindBrokerFence, BrokerFence: &BrokerFenceRecord{BrokerID: id, Fenced: true}}); err != nil {
			t.Fatal(err)
		}
	}
	return im
}

// TestLaggingNodes: the answer to a change waits for each follower that
// fetched recently, is unfenced, and reported an applied index below the
// change's offset; not for a fenced node, a silent one, or one that never
// registered.
func TestLaggingNodes(t *testing.T) {
	now := time.Unix(1000, 0)
	live := 2 * time.Second
	fresh, stale := now.Add(-100*time.Millisecond), now.Add(-3*time.Second)
	for _, tc := range []struct {
		name      string
		fenced    []int32
		followers map[election.NodeID]quorum.FollowerState
		want      []int32
	}{
		{name: "every follower applied", followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 10, LastFetch: fresh}, 2: {Applied: 12, LastFetch: fresh}}},
		{name: "both behind", followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 9, LastFetch: fresh}, 2: {Applied: 0, LastFetch: fresh}}, want: []int32{1, 2}},
		{name: "one behind", followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 10, LastFetch: fresh}, 2: {Applied: 9, LastFetch: fresh}}, want: []int32{2}},
		{name: "fetched exactly the live window ago", followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 9, LastFetch: now.Add(-live)}}, want: []int32{1}},
		{name: "silent past the live window", followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 10, LastFetch: fresh}, 2: {Applied: 3, LastFetch: stale}}},
		{name: "fenced", fenced: []int32{2}, followers: map[election.NodeID]quorum.FollowerState{
			1: {Applied: 10, LastFetch: fresh}, 2: {Applied: 3, LastFetch: fresh}}},
		{name: "not a registered broker", followers: map[election.NodeID]quorum.FollowerState{
			7: {Applied: 3, LastFetch: fresh}}},
		{name: "no followers known (not the controller)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := laggingNodes(imageWithBrokers(t, tc.fenced...), tc.followers, 10, now, live)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("lagging %v, want %v", got, tc.want)
			}
		})
	}
}

// fakeFollowers publishes follower states as the quorum driver does: a
// new map and the channel of the previous publication closed.
type fakeFollowers struct {
	mu      sync.Mutex
	f       map[election.NodeID]quorum.FollowerState
	changed chan struct{}
}

func (ff *fakeFollowers) get() (map[election.NodeID]quorum.FollowerState, <-chan struct{}) {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	return ff.f, ff.changed
}

func (ff *fakeFollowers) publish(f map[election.NodeID]quorum.FollowerState) {
	ff.mu.Lock()
	defer ff.mu.Unlock()
	ff.f = f
	close(ff.changed)
	ff.changed = make(chan struct{})
}

// TestWaitPropagated: the wait ends as soon as a publication shows every
// node that counts at the offset; it gives up after its timeout, or when
// its context ends, naming the nodes still behind.
func TestWaitPropagated(t *testing.T) {
	im := imageWithBrokers(t)
	now := time.Now()
	behind := map[election.NodeID]quorum.FollowerState{1: {Applied: 4, LastFetch: now}, 2: {Applied: 4, LastFetch: now}}
	newSource := func() (*fakeFollowers, propagationSource) {
		ff := &fakeFollowers{f: behind, changed: make(chan struct{})}
		return ff, propagationSource{followers: ff.get, image: func() *Image { return im }, now: func() time.Time { return now }, live: time.Minute}
	}
	ctx := context.Background()

	t.Run("already applied", func(t *testing.T) {
		_, src := newSource()
		if lag := waitPropagated(ctx, src, 4, time.Minute); lag != nil {
			t.Fatalf("lagging %v at an offset both applied", lag)
		}
	})

	t.Run("applied while waiting", func(t *testing.T) {
		ff, src := newSource()
		done := make(chan []int32, 1)
		go func() { done <- waitPropagated(ctx, src, 5, time.Minute) }()
		// Node 1 catches up first: still waiting for node 2.
		ff.publish(map[election.NodeID]quorum.FollowerState{1: {Applied: 5, LastFetch: now}, 2: {Applied: 4, LastFetch: now}})
		select {
		case lag := <-done:
			t.Fatalf("returned %v while node 2 was behind", lag)
		default:
		}
		ff.publish(map[election.NodeID]quorum.FollowerState{1: {Applied: 5, LastFetch: now}, 2: {Applied: 6, LastFetch: now}})
		select {
		case lag := <-done:
			if lag != nil {
				t.Fatalf("lagging %v after both applied", lag)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("still waiting 10 s after both nodes applied the offset")
		}
	})

	t.Run("timeout", func(t *testing.T) {
		_, src := newSource()
		start := time.Now()
		lag := waitPropagated(ctx, src, 5, 50*time.Millisecond)
		if !slices.Equal(lag, []int32{1, 2}) {
			t.Fatalf("lagging %v after the timeout, want [1 2]", lag)
		}
		if d := time.Since(start); d < 50*time.Millisecond || d > 10*time.Second {
			t.Fatalf("gave up after %v, want the 50ms timeout", d)
		}
	})

	t.Run("context ends", func(t *testing.T) {
		_, src := newSource()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if lag := waitPropagated(cctx, src, 5, time.Minute); !slices.Equal(lag, []int32{1, 2}) {
			t.Fatalf("lagging %v after the context ended, want [1 2]", lag)
		}
	})
}
