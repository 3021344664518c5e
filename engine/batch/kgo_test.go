package batch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceCatcher is the smallest broker franz-go's producer will talk to:
// ApiVersions, Metadata (one topic, one partition, led by itself) and
// Produce, whose record batches it keeps. It lets a real client, written by
// someone else, build the batches this package must accept: CRC,
// compression framing and record layout as shipped.
type produceCatcher struct {
	ln      net.Listener
	mu      sync.Mutex
	batches [][]byte // one Produce partition's records field each
	offset  int64
	wg      sync.WaitGroup
	errs    chan error
}

const catcherTopic = "wren-batch-test"

func newProduceCatcher(t *testing.T) *produceCatcher {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := &produceCatcher{ln: ln, errs: make(chan error, 16)}
	var conns sync.Map
	pc.wg.Add(1)
	go func() {
		defer pc.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
			pc.wg.Add(1)
			go func() {
				defer pc.wg.Done()
				defer c.Close()
				if err := pc.serve(c); err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
					select {
					case pc.errs <- err:
					default:
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		pc.wg.Wait()
		select {
		case err := <-pc.errs:
			t.Errorf("fake broker: %v", err)
		default:
		}
	})
	return pc
}

func (pc *produceCatcher) serve(c net.Conn) error {
	for {
		if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
			return err
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return err
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 64<<20 {
			return fmt.Errorf("frame of %d bytes", n)
		}
		frame := make([]byte, n)
		if _, err := io.ReadFull(c, frame); err != nil {
			return err
		}
		resp, err := pc.handle(frame)
		if err != nil {
			return err
		}
		if _, err := c.Write(resp); err != nil {
			return err
		}
	}
}

func (pc *produceCatcher) handle(frame []byte) ([]byte, error) {
	if len(frame) < 10 {
		return nil, fmt.Errorf("short request header")
	}
	key := int16(binary.BigEndian.Uint16(frame))
	version := int16(binary.BigEndian.Uint16(frame[2:]))
	corr := binary.BigEndian.Uint32(frame[4:])
	clientIDLen := int(int16(binary.BigEndian.Uint16(frame[8:])))
	body := frame[10+max(clientIDLen, 0):]
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("unknown api key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() { // skip the request header's tagged fields
		count, n := binary.Uvarint(body)
		body = body[n:]
		for range count {
			_, n := binary.Uvarint(body)
			body = body[n:]
			l, n := binary.Uvarint(body)
			body = body[n+int(l):]
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("api key %d v%d: %w", key, version, err)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		r.ApiKeys = []kmsg.ApiVersionsResponseApiKey{
			{ApiKey: 0, MinVersion: 3, MaxVersion: 8}, // Produce, non-flexible; zstd from v7
			{ApiKey: 3, MinVersion: 0, MaxVersion: 8}, // Metadata, non-flexible
			{ApiKey: 18, MinVersion: 0, MaxVersion: 4},
		}
	case *kmsg.MetadataResponse:
		host, port, _ := net.SplitHostPort(pc.ln.Addr().String())
		var p int32
		fmt.Sscan(port, &p)
		r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: host, Port: p}}
		r.ControllerID = 1
		topic := kmsg.NewMetadataResponseTopic()
		topic.Topic = kmsg.StringPtr(catcherTopic)
		topic.Partitions = []kmsg.MetadataResponseTopicPartition{{Partition: 0, Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}}
		r.Topics = []kmsg.MetadataResponseTopic{topic}
	case *kmsg.ProduceResponse:
		pr := req.(*kmsg.ProduceRequest)
		for _, tp := range pr.Topics {
			rt := kmsg.ProduceResponseTopic{Topic: tp.Topic}
			for _, p := range tp.Partitions {
				pc.mu.Lock()
				pc.batches = append(pc.batches, append([]byte{}, p.Records...))
				base := pc.offset
				pc.offset += 1000
				pc.mu.Unlock()
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.BaseOffset = p.Partition, base
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
	default:
		return nil, fmt.Errorf("unexpected api key %d", key)
	}
	out := make([]byte, 8, 64)
	binary.BigEndian.PutUint32(out[4:], corr)
	if resp.IsFlexible() && key != 18 { // ApiVersions' response header is never flexible
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// TestFranzGoProducerBatches has franz-go's producer send records in every
// codec and checks that what it sent validates and reads back.
func TestFranzGoProducerBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a client and a fake broker")
	}
	rng := rand.New(rand.NewPCG(51, 51))
	for _, c := range codecCases {
		if c.xerial {
			continue // franz-go picks its snappy framing itself
		}
		t.Run(c.name, func(t *testing.T) {
			pc := newProduceCatcher(t)
			cl, err := kgo.NewClient(
				kgo.SeedBrokers(pc.ln.Addr().String()),
				kgo.DefaultProduceTopic(catcherTopic),
				kgo.ProducerBatchCompression(kgoCodec(c.ct)),
				kgo.DisableIdempotentWrite(),
				kgo.RequiredAcks(kgo.LeaderAck()),
				kgo.RecordPartitioner(kgo.ManualPartitioner()),
			)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			want := sampleRecords(rng, 300)
			var recs []*kgo.Record
			for _, w := range want {
				r := &kgo.Record{Key: w.Key, Value: w.Value, Timestamp: time.UnixMilli(w.Timestamp)}
				for _, h := range w.Headers {
					r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
				}
				recs = append(recs, r)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			pc.mu.Lock()
			sent := pc.batches
			pc.mu.Unlock()
			var got []Record
			for i, records := range sent {
				for len(records) > 0 {
					n, h, err := Scan(records)
					if err != nil {
						t.Fatalf("request %d: scan: %v", i, err)
					}
					if h.CompressionType() != c.ct {
						t.Fatalf("franz-go used %v", h.CompressionType())
					}
					if c.ct == CompressionSnappy {
						t.Logf("franz-go snappy framing: xerial=%v", bytes.HasPrefix(records[RecordsOffset:], xerialMagic))
					}
					more, err := collect(t, records[:n], Limits{})
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					got = append(got, more...)
					records = records[n:]
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%d records in %d requests, want %d", len(got), len(sent), len(want))
			}
			for i := range want {
				if err := sameRecord(want[i], got[i]); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
			}
			t.Logf("%d records in %d produce requests", len(got), len(sent))
		})
	}
}
