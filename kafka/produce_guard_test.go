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
// entries (and maxProduceTags tags) and refuses one more, in every version
// layout; it allocates nothing; and what it passes decodes within 8 MiB.
func TestProducePrecheck(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocations cost")
	}
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
		shapes := map[string][]byte{"partitions": atMax, "topics": produceBody(version, maxProduceEntries, 0)}
		if version >= 9 {
			shapes["tags"] = withUnknownTags(produceBody(version, maxProduceEntries, 0), maxProduceTags)
		}
		for name, body := range shapes {
			if err := precheckProduce(version, body); err != nil {
				t.Fatalf("v%d %s: %v", version, name, err)
			}
			alloc, err := decodeAlloc(kmsg.Produce, version, body)
			if err != nil || alloc > 8<<20 {
				t.Fatalf("v%d: decoding the largest accepted request (%s) allocated %d bytes (err %v), want <= 8 MiB", version, name, alloc, err)
			}
			t.Logf("v%d: %d entries (%s) in %d bytes decode to %d KiB", version, maxProduceEntries, name, len(body), alloc>>10)
		}
	}

	// Unknown tagged fields count too (flexible versions).
	if err := precheckProduce(9, withUnknownTags(produceBody(9, 0, 0), maxProduceTags+1)); !errors.Is(err, ErrTooManyEntries) {
		t.Fatalf("too many unknown tags: %v", err)
	}
}

// withUnknownTags replaces the empty top-level tag section ending body
// with n distinct unknown tags without data.
func withUnknownTags(body []byte, n int) []byte {
	body = binary.AppendUvarint(body[:len(body)-1], uint64(n))
	for i := range n {
		body = binary.AppendUvarint(body, uint64(1000+i))
		body = append(body, 0)
	}
	return body
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
