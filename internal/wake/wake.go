// Package wake waits for the first of many channels to close: a long poll
// (a consumer's or a follower's Fetch) waits on one channel per partition
// it names, each closed when that partition gets records.
package wake

import (
	"context"
	"reflect"
	"time"
)

// maxSelect is the most channels Any waits on in one select.
const maxSelect = 64

// chunk is how many channels one goroutine of Any selects over
// (reflect.Select takes at most 65536 cases).
const chunk = 1024

// Any waits until one of chans is closed (true), or the deadline passes
// or ctx ends (false). Up to maxSelect channels are waited on in one
// select, so an append wakes the waiting fetch directly: a goroutine in
// between adds a second wake-up, and on a busy host each costs a
// scheduling delay on the way to every acks=all answer. Beyond that (a
// follower's fetch names every partition it follows, thousands on a large
// node, and waits like this every replica.fetch.wait.max.ms while idle),
// one goroutine per chunk of channels, each in one select over its chunk,
// keeps the wait from costing a goroutine per partition.
func Any(ctx context.Context, chans []<-chan struct{}, deadline time.Time) bool {
	d := time.Until(deadline)
	if d <= 0 {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	done := ctx.Done() // nil for context.Background: never ready
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-t.C:
			return false
		case <-done:
			return false
		}
	}
	if n := len(chans); n <= maxSelect {
		sel := make([]reflect.SelectCase, 0, n+2)
		sel = append(sel, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(t.C)})
		if done != nil {
			sel = append(sel, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(done)})
		}
		first := len(sel)
		for _, ch := range chans {
			sel = append(sel, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		chosen, _, _ := reflect.Select(sel)
		return chosen >= first
	}
	woke := make(chan struct{}, 1)
	stop := make(chan struct{})
	defer close(stop)
	for first := 0; first < len(chans); first += chunk {
		// The cases are built here, not in the goroutine: chans is the
		// caller's, and the goroutine may run after Any returned.
		part := chans[first:min(len(chans), first+chunk)]
		sel := make([]reflect.SelectCase, 0, len(part)+1)
		sel = append(sel, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(stop)})
		for _, ch := range part {
			sel = append(sel, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
		}
		go func() {
			if i, _, _ := reflect.Select(sel); i > 0 {
				select {
				case woke <- struct{}{}:
				default:
				}
			}
		}()
	}
	select {
	case <-woke:
		return true
	case <-t.C:
		return false
	case <-done:
		return false
	}
}
