package quorum

import (
	"context"
	"testing"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/election"
	"github.com/wren-broker/wren/internal/vfs"
)

// timed puts tick t of the node's clock at tickOrigin + t*Tick, keeps
// what the controller has not seen absent, and leaves a follower's
// status (no progress) without times.
func TestStatusTicksToTimes(t *testing.T) {
	origin := time.Now()
	d := &Driver{cfg: Config{Tick: 50 * time.Millisecond}, tickOrigin: origin}
	at := origin.Add(time.Second)
	st := d.timed(metalog.Status{Now: 20, Followers: map[election.NodeID]metalog.FollowerProgress{
		2: {LastFetchTick: 18, LastCaughtUpTick: 12},
		3: {LastFetchTick: 0, LastCaughtUpTick: -1},
	}}, at)
	if st.At != at {
		t.Errorf("At %v, want %v", st.At, at)
	}
	for _, c := range []struct {
		what string
		got  map[election.NodeID]time.Time
		id   election.NodeID
		want time.Duration // after origin; -1: absent
	}{
		{"2's last fetch", st.LastFetch, 2, 900 * time.Millisecond},
		{"2's last caught up", st.LastCaughtUp, 2, 600 * time.Millisecond},
		{"3's last fetch", st.LastFetch, 3, 0},
		{"3's last caught up", st.LastCaughtUp, 3, -1},
	} {
		got, ok := c.got[c.id]
		switch {
		case c.want < 0 && ok:
			t.Errorf("%s: %v, want none", c.what, got.Sub(origin))
		case c.want >= 0 && (!ok || got.Sub(origin) != c.want):
			t.Errorf("%s: %v (present %v), want %v after the tick origin", c.what, got.Sub(origin), ok, c.want)
		}
	}
	if st := d.timed(metalog.Status{Now: 20}, at); st.LastFetch != nil || st.LastCaughtUp != nil {
		t.Errorf("a follower's status has times %v %v, want none", st.LastFetch, st.LastCaughtUp)
	}
}

// On three drivers over the in-memory network, the acting controller
// reports when each follower last fetched and was last caught up: after
// the drivers started, never after the status was read, caught up no
// later than the fetch. A follower cut off keeps its times while the
// other's move on.
func TestStatusFollowerTimes(t *testing.T) {
	voters := []election.NodeID{1, 2, 3}
	net := NewMemNetwork()
	hist := &history{entries: map[int64]metalog.Entry{}}
	started := time.Now()
	var nodes []*testNode
	for _, id := range voters {
		// A longer tick than testTick: the controller must keep its lease
		// (15 ticks) through the test on a busy machine.
		n := &testNode{id: id, fs: vfs.NewMem(), hist: hist, voters: voters, seed: uint64(id), tick: stableTick}
		n.start(t, net)
		nodes = append(nodes, n)
	}
	defer func() {
		for _, n := range nodes {
			n.d.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(t, "an acting controller", 10*time.Second, func() bool { return acting(nodes) != nil })
	c := acting(nodes)
	var followers []election.NodeID
	for _, id := range voters {
		if id != c.id {
			followers = append(followers, id)
		}
	}
	status := func() Status {
		t.Helper()
		st, err := c.d.Status(ctx)
		if err != nil {
			t.Fatalf("controller %d: status: %v", c.id, err)
		}
		if !st.Election.Soft.Acting {
			t.Fatalf("controller %d stopped acting: %+v", c.id, st.Election)
		}
		return st
	}
	var st Status
	waitFor(t, "the controller to see both followers fetch", 10*time.Second, func() bool {
		st = status()
		return len(st.LastFetch) == 2 && len(st.LastCaughtUp) == 2
	})
	for _, id := range followers {
		fetch, caughtUp := st.LastFetch[id], st.LastCaughtUp[id]
		if fetch.Before(started) || fetch.After(st.At) || caughtUp.Before(started) || caughtUp.After(fetch) {
			t.Errorf("follower %d: last fetch %v, last caught up %v after the start, status read %v after it; want start <= caught up <= fetch <= read",
				id, fetch.Sub(started), caughtUp.Sub(started), st.At.Sub(started))
		}
	}

	// Cut one follower off: once the controller has heard the other
	// fetch twice since, the cut one's times are what they were.
	cut, other := followers[0], followers[1]
	net.Isolate(cut)
	cutAt := time.Now()
	var before Status
	waitFor(t, "a fetch of the other follower after the cut", 10*time.Second, func() bool {
		before = status()
		return before.LastFetch[other].After(cutAt)
	})
	var after Status
	waitFor(t, "another fetch of the other follower", 10*time.Second, func() bool {
		after = status()
		return after.LastFetch[other].After(before.At)
	})
	if !after.LastFetch[cut].Equal(before.LastFetch[cut]) || !after.LastCaughtUp[cut].Equal(before.LastCaughtUp[cut]) {
		t.Errorf("cut-off follower %d: times moved from %v/%v to %v/%v", cut,
			before.LastFetch[cut].Sub(started), before.LastCaughtUp[cut].Sub(started),
			after.LastFetch[cut].Sub(started), after.LastCaughtUp[cut].Sub(started))
	}
	if !after.LastCaughtUp[other].After(cutAt) {
		t.Errorf("follower %d: last caught up %v, want after the cut at %v (it fetches at the log end)", other,
			after.LastCaughtUp[other].Sub(started), cutAt.Sub(started))
	}
}
