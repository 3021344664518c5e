package cluster

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/wren-broker/wren/internal/vfs"
)

// The metadata image at 1,000 and 10,000 partitions (100 per topic, RF 3
// on three brokers): what one partition costs in the snapshot, in memory
// and to decode, grows linearly. The figures are logged (go test -v);
// only the sizes are checked, never a time.
func TestImageScale(t *testing.T) {
	var perPartition [2]float64
	for i, partitions := range []int{1000, 10000} {
		c, err := OpenController(vfs.NewMem(), "/meta", ControllerConfig{NodeID: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, id := range []int32{2, 3} {
			if err := c.RegisterBroker(ctx, BrokerRegistrationRecord{BrokerID: id}, true); err != nil {
				t.Fatal(err)
			}
		}
		var topics []CreateTopic
		for n := range partitions / 100 {
			topics = append(topics, CreateTopic{Name: fmt.Sprintf("scale-%d", n), NumPartitions: 100, ReplicationFactor: 3})
		}
		start := c.Image().Offset
		began := time.Now()
		res, err := c.CreateTopics(ctx, topics, false)
		took := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		entries := walEntries(t, c, start)
		logBytes := 0
		for _, s := range entries {
			logBytes += s
		}
		snap, err := encodeImage(c.Image())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		began = time.Now()
		im, err := decodeImage(snap)
		decodeTook := time.Since(began)
		if err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		// What decoding allocates bounds the image's size in memory.
		heap := int64(after.TotalAlloc - before.TotalAlloc)
		runtime.KeepAlive(im)
		perPartition[i] = float64(len(snap)) / float64(partitions)
		t.Logf("%d partitions: CreateTopics %v in %d entries (%d bytes of log); snapshot %d bytes (%.0f per partition), decoded in %v, decoding allocated %d KiB (%.0f bytes per partition, a bound on the image in memory)",
			partitions, took.Round(time.Millisecond), len(entries), logBytes, len(snap), perPartition[i], decodeTook.Round(time.Millisecond), heap>>10, float64(heap)/float64(partitions))
		if perPartition[i] > 250 {
			t.Errorf("%d partitions: %.0f snapshot bytes per partition, want at most 250", partitions, perPartition[i])
		}
		if want := (logBytes + createEntryBytes - 1) / createEntryBytes; len(entries) > want+1 {
			t.Errorf("%d partitions in %d entries, want about %d", partitions, len(entries), want)
		}
	}
	if perPartition[1] > 1.2*perPartition[0] {
		t.Errorf("snapshot bytes per partition grew from %.0f at 1,000 to %.0f at 10,000", perPartition[0], perPartition[1])
	}
}
