package cluster

import (
	"context"
	"sync"
	"sync/atomic"
)

// publisher hands committed images to the subscribers on its own
// goroutine, so that what they do with an image (the broker creates and
// fdatasyncs partition directories, moves leaderships) never holds up the
// quorum driver, whose ticks keep the lease and the election timers: a
// slow disk delays the subscribers, not the quorum. The driver offers
// each image it applies; the publisher takes the latest. When it falls
// behind it skips the images between, so each subscriber sees a
// transition from the image it saw last to the newest one; every image
// is whole, so old -> new is always a correct change.
//
// It is the one fan-out of images to subscribers.
type publisher struct {
	// mu guards latest and published's waiters.
	mu     sync.Mutex
	latest *Image
	// changed is closed, and replaced, each time an image is published.
	changed chan struct{}
	wake    chan struct{} // one pending wake-up

	// fanMu orders publishing with subscribe, and guards subscribers.
	fanMu       sync.Mutex
	subscribers []func(old, new *Image)
	// published is the image every subscriber has seen last.
	published atomic.Pointer[Image]
	// after runs after each publication, under fanMu, with the image
	// every subscriber now holds.
	after func(*Image)

	stop chan struct{}
	done chan struct{}
}

func newPublisher(first *Image, after func(*Image)) *publisher {
	p := &publisher{latest: first, changed: make(chan struct{}), wake: make(chan struct{}, 1), after: after,
		stop: make(chan struct{}), done: make(chan struct{})}
	p.published.Store(first)
	go p.run()
	return p
}

// offer hands the publisher a new image. It never blocks: the driver
// goroutine calls it.
func (p *publisher) offer(im *Image) {
	p.mu.Lock()
	p.latest = im
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) run() {
	defer close(p.done)
	for {
		select {
		case <-p.stop:
			return
		case <-p.wake:
		}
		p.mu.Lock()
		im := p.latest
		p.mu.Unlock()
		p.fanMu.Lock()
		old := p.published.Load()
		if im != old {
			for _, fn := range p.subscribers {
				fn(old, im)
			}
			p.published.Store(im)
		}
		if p.after != nil {
			p.after(im)
		}
		p.fanMu.Unlock()
		p.mu.Lock()
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
}

// subscribe adds fn and runs it once with (nil, the published image), so
// it starts from the image the other subscribers hold and sees every
// transition after it.
func (p *publisher) subscribe(fn func(old, new *Image)) {
	p.fanMu.Lock()
	defer p.fanMu.Unlock()
	p.subscribers = append(p.subscribers, fn)
	fn(nil, p.published.Load())
}

// wait returns once the subscribers have been given an image at offset
// or beyond, or when ctx ends or the publisher stops.
func (p *publisher) wait(ctx context.Context, offset uint64) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if p.published.Load().Offset >= offset {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.done:
			return ErrClosed
		}
	}
}

// close stops the publisher; an image offered but not published yet is
// not published.
func (p *publisher) close() {
	close(p.stop)
	<-p.done
}
