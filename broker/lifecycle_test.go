package broker

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/vfs"
)

func TestDataDirLockedAgainstSecondBroker(t *testing.T) {
	dir := t.TempDir()
	startBroker(t, testConfig(t, dir, ""))
	_, err := Start(testConfig(t, dir, ""), Options{Logger: testLogger(t)})
	if !errors.Is(err, vfs.ErrLocked) || !strings.Contains(err.Error(), "in use by another process") {
		t.Fatalf("second broker on the same data directory: %v", err)
	}
}

func TestAutoCreateTopics(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		extra := "[topics]\nauto.create.topics.enable = false\n"
		if enabled {
			extra = "[topics]\nauto.create.topics.enable = true\nnum.partitions = 2\n"
		}
		b := startBroker(t, testConfig(t, t.TempDir(), extra))
		cl, _ := newClient(t, b)
		ctx := testContext(t)
		req := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{"auto-made", "__consumer_offsets", "../escape"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, rt)
		}
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		auto := resp.Topics[0]
		if enabled && (auto.ErrorCode != 0 || len(auto.Partitions) != 2) {
			t.Fatalf("auto-create on: %+v", auto)
		}
		if !enabled && auto.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("auto-create off: error %d", auto.ErrorCode)
		}
		if resp.Topics[2].ErrorCode != kerr.InvalidTopicException.Code {
			t.Fatalf("path-like name: error %d", resp.Topics[2].ErrorCode)
		}
		// Listing all topics lists internal ones as Kafka does, flagged,
		// and only those.
		all, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{}
		for _, tp := range all.Topics {
			internal[*tp.Topic] = tp.IsInternal
		}
		if isInternal, listed := internal["__consumer_offsets"]; !listed || !isInternal {
			t.Fatalf("all topics: __consumer_offsets listed %v, is_internal %v: %v", listed, isInternal, internal)
		}
		if enabled && internal["auto-made"] {
			t.Fatalf("all topics: auto-made flagged internal")
		}
	}
}

func TestProduceErrors(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir(), "[topics]\nauto.create.topics.enable = false\n"))
	cl, adm := newClient(t, b, kgo.DisableIdempotentWrite(), kgo.RecordRetries(1))
	ctx := testContext(t)
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("1000")}, "small"); err != nil {
		t.Fatal(err)
	}
	// Random bytes: max.message.bytes applies to the batch as sent, after
	// the client's compression.
	big := make([]byte, 5000)
	rand.Read(big)
	err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small", Value: big}).FirstErr()
	if !errors.Is(err, kerr.MessageTooLarge) {
		t.Fatalf("record over max.message.bytes: %v", err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "small", Value: make([]byte, 100)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// acks outside {-1, 0, 1}, sent raw (a client library would not).
	req := kmsg.NewPtrProduceRequest()
	req.Version = 7
	req.Acks = 2
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "small"
	rt.Partitions = append(rt.Partitions, kmsg.NewProduceRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrProduceResponse()
	resp.Version = 7
	rawRoundTrip(t, b, req, resp)
	if c := resp.Topics[0].Partitions[0].ErrorCode; c != kerr.InvalidRequiredAcks.Code {
		t.Fatalf("acks=2: error %d", c)
	}
}

// rawRoundTrip sends one request on a new connection and decodes the
// response, with no client library in between.
func rawRoundTrip(t *testing.T, b *Broker, req kmsg.Request, resp kmsg.Response) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", b.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	body := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	body = binary.BigEndian.AppendUint16(body, uint16(req.GetVersion()))
	body = binary.BigEndian.AppendUint32(body, 42)
	body = binary.BigEndian.AppendUint16(body, 4)
	body = append(body, "test"...)
	if req.IsFlexible() {
		body = append(body, 0)
	}
	body = req.AppendTo(body)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if _, err := conn.Write(append(frame, body...)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(conn, size[:]); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(conn, buf); err != nil {
		t.Fatal(err)
	}
	if corr := binary.BigEndian.Uint32(buf); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	buf = buf[4:]
	if resp.IsFlexible() {
		buf = buf[1:]
	}
	if err := resp.ReadFrom(buf); err != nil {
		t.Fatal(err)
	}
}
