package kafka

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func produceBody(version int16, topics, partitionsPerTopic int) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	for range topics {
		t := kmsg.NewProduceRequestTopic()
		t.Topic = "t"
		t.Partitions = make([]kmsg.ProduceRequestTopicPartition, partitionsPerTopic)
		req.Topics = append(req.Topics, t)
	}
	return req.AppendTo(nil)
}

// TestProducePrecheck: the pre-check passes exactly maxProduceEntries
// entries and refuses one more, in every version layout; it allocates
// nothing; and what it passes decodes within a bounded size.
func TestProducePrecheck(t *testing.T) {
	for _, version := range []int16{0, 3, 8, 9, 12, 13} {
		if version > kmsg.NewPtrProduceRequest().MaxVersion() {
			continue
		}
		atMax := produceBody(version, 1, maxProduceEntries-1)
		if err := precheckProduce(version, atMax); err != nil {
			t.Fatalf("v%d: %d entries refused: %v", version, maxProduceEntries, err)
		}
		for name, body := range map[string][]byte{
			"partitions": produceBody(version, 1, maxProduceEntries),
			"topics":     produceBody(version, maxProduceEntries+1, 0),
		} {
			if err := precheckProduce(version, body); !errors.Is(err, ErrTooManyEntries) {
				t.Fatalf("v%d, one entry too many in %s: %v", version, name, err)
			}
		}
		if allocs := testing.AllocsPerRun(3, func() { precheckProduce(version, atMax) }); allocs != 0 {
			t.Fatalf("v%d: pre-check allocates %.0f times", version, allocs)
		}
		alloc, err := decodeAlloc(kmsg.Produce, version, atMax)
		if err != nil || alloc > 8<<20 {
			t.Fatalf("v%d: decoding the largest accepted request allocated %d bytes (err %v), want <= 8 MiB", version, alloc, err)
		}
		t.Logf("v%d: %d entries in %d bytes decode to %d KiB", version, maxProduceEntries, len(atMax), alloc>>10)
	}

	// Unknown tagged fields count too (flexible versions).
	body := produceBody(9, 0, 0)
	body = binary.AppendUvarint(body[:len(body)-1], maxProduceEntries+1)
	for i := range maxProduceEntries + 1 {
		body = binary.AppendUvarint(body, uint64(1000+i))
		body = append(body, 0)
	}
	if err := precheckProduce(9, body); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("too many unknown tags: %v", err)
	}
}

// TestProducePrecheckCloses: through the server, the refused request
// never reaches its handler and closes the connection.
func TestProducePrecheckCloses(t *testing.T) {
	called := make(chan struct{}, 1)
	ts := startServer(t, ServerConfig{}, testTable(apiEntry{
		Key: kmsg.Produce, Min: 0, MinServed: 3, Max: 11, Precheck: precheckProduce,
		Handle: func(s *Server, req *Request) (Pending, error) {
			called <- struct{}{}
			return nil, nil
		},
	}))
	c := dial(t, ts.addr)
	c.send(frame(header(kmsg.Produce, 9, 1, "c", []byte{0}), produceBody(9, 1, maxProduceEntries)))
	c.expectClosed()
	ts.logs.waitClosedWith(t, ErrTooManyEntries)
	select {
	case <-called:
		t.Fatal("handler called for a refused request")
	default:
	}
}
