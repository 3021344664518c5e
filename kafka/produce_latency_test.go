package kafka

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceTimes is an Observer that is a ProduceObserver too: it hands
// each Produce's times to the test.
type produceTimes struct {
	nopObserver
	done chan [2]time.Duration
}

func (o *produceTimes) ProduceDone(queued, handled time.Duration) {
	o.done <- [2]time.Duration{queued, handled}
}

// TestProduceLatencyQueuedBehindEarlierAnswer: a Produce read while the
// answer before it on its connection is held counts that hold as queued,
// within its handled time; requests other than Produce are not counted.
func TestProduceLatencyQueuedBehindEarlierAnswer(t *testing.T) {
	obs := &produceTimes{done: make(chan [2]time.Duration, 4)}
	held, produced := make(gate), make(chan struct{}, 1)
	s := startServer(t, ServerConfig{Observer: obs}, testTable(
		metadataRow(func(s *Server, req *Request) (Pending, error) {
			resp := metadataResponse(req)
			return func(ctx context.Context) (Response, error) {
				if err := held.wait(ctx); err != nil {
					return Response{}, err
				}
				return Response{Msg: resp}, nil
			}, nil
		}),
		apiEntry{Key: kmsg.Produce, Min: 3, Max: 11, MaxRequestBytes: smallRequestBytes,
			Handle: func(s *Server, req *Request) (Pending, error) {
				produced <- struct{}{}
				return Respond(req.Body.(*kmsg.ProduceRequest).ResponseKind()), nil
			}},
	))
	c := dial(t, s.addr)
	c.send(requestFrame(metadataRequest(12), 1, "test"))
	preq := kmsg.NewPtrProduceRequest()
	preq.Version, preq.Acks, preq.TimeoutMillis = 9, -1, 1000
	c.send(requestFrame(preq, 2, "test"))
	recv(t, produced, "the Produce handled on the reader")
	read := time.Now() // after the Produce's frame was read
	for range 100 {
		// The Produce waits behind the held answer meanwhile.
		runtime.Gosched()
	}
	heldFor := time.Since(read)
	close(held)
	if corr, _ := c.readResponse(kmsg.Metadata, 12); corr != 1 {
		t.Fatalf("first answer has correlation id %d, want 1", corr)
	}
	if corr, _ := c.readResponse(kmsg.Produce, 9); corr != 2 {
		t.Fatalf("second answer has correlation id %d, want 2", corr)
	}
	got := recv(t, obs.done, "the Produce's times")
	queued, handled := got[0], got[1]
	if queued < heldFor || handled < queued {
		t.Fatalf("queued %v, handled %v: want queued at least the %v the answer before it was held, and handled at least queued", queued, handled, heldFor)
	}
	select {
	case extra := <-obs.done:
		t.Fatalf("times observed for a request other than the Produce: %v", extra)
	default:
	}
}
