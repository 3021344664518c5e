package cluster

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/internal/vfs"
)

// walEntries lists the sizes of the metadata log's record entries after
// index from.
func walEntries(t *testing.T, c *Controller, from uint64) []int {
	t.Helper()
	ents, err := c.q.driver.Entries(context.Background(), int64(from))
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	for _, e := range ents {
		if e.Type == metalog.EntryRecords {
			sizes = append(sizes, len(e.Data))
		}
	}
	return sizes
}

// One CreateTopics of many topics commits them as one metadata-log entry,
// each topic still validated on its own: a bad topic in the middle, or a
// name asked twice, fails alone.
func TestCreateTopicsCommitsOneEntry(t *testing.T) {
	c := open(t, vfs.NewMem())
	defer c.Close()
	start := c.Image().Offset
	var topics []CreateTopic
	for i := range 100 {
		topics = append(topics, CreateTopic{Name: fmt.Sprintf("t%d", i), NumPartitions: 10, ReplicationFactor: 1})
	}
	topics[40].Name = "bad/name"
	topics[60].Name = "t59" // asked twice: the second exists by then
	topics[70].NumPartitions = 0
	res, err := c.CreateTopics(context.Background(), topics, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		var want *kerr.Error
		switch i {
		case 40:
			want = kerr.InvalidTopicException
		case 60:
			want = kerr.TopicAlreadyExists
		case 70:
			want = kerr.InvalidPartitions
		}
		if (want == nil) != (r.Err == nil) || want != nil && !errors.Is(r.Err, want) {
			t.Errorf("topic %d %q: %v, want %v", i, r.Name, r.Err, want)
		}
		if want == nil && (r.ID == (UUID{}) || c.Image().Topic(r.Name) == nil || c.Image().Topic(r.Name).ID != r.ID ||
			len(c.Image().Topic(r.Name).Partitions) != 10) {
			t.Errorf("topic %d %q: id %v, not in the image as answered", i, r.Name, r.ID)
		}
	}
	if n := len(walEntries(t, c, start)); n != 1 {
		t.Fatalf("97 topics created in %d metadata-log entries, want 1", n)
	}
	if got := len(c.Image().TopicNames()); got != 97 {
		t.Fatalf("%d topics in the image, want 97", got)
	}
}

// A request whose records exceed createEntryBytes is split into entries
// of whole topics, each within the bound, and the image places the later
// topics' replicas counting the earlier ones.
func TestCreateTopicsSplitsLargeRequests(t *testing.T) {
	c := open(t, vfs.NewMem())
	defer c.Close()
	start := c.Image().Offset
	var topics []CreateTopic
	for i := range 40 {
		topics = append(topics, CreateTopic{Name: fmt.Sprintf("big%d", i), NumPartitions: 400, ReplicationFactor: 1})
	}
	res, err := c.CreateTopics(context.Background(), topics, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Name, r.Err)
		}
	}
	sizes := walEntries(t, c, start)
	total := 0
	for _, s := range sizes {
		total += s
		if s > createEntryBytes {
			t.Errorf("an entry of %d bytes, over %d", s, createEntryBytes)
		}
	}
	if want := (total + createEntryBytes - 1) / createEntryBytes; len(sizes) < want || len(sizes) > want+1 {
		t.Fatalf("%d bytes of records in %d entries (%v), want about %d", total, len(sizes), sizes, want)
	}
	if n := len(c.Image().TopicNames()); n != 40 {
		t.Fatalf("%d topics, want 40", n)
	}
}

// applyRecords (one entry, copying each map and topic once) gives the
// image that applying the records one by one gives, and leaves the image
// it started from as it was: a published image never changes.
func TestApplyRecordsMatchesApply(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	im := emptyImage()
	var ids []UUID
	parts := map[UUID]int32{}
	names := map[UUID]string{}
	offset := uint64(0)
	for round := range 200 {
		var recs []Record
		for range 1 + rng.IntN(30) {
			switch k := rng.IntN(10); {
			case k == 0 || len(ids) == 0:
				id := NewUUID()
				ids = append(ids, id)
				names[id] = fmt.Sprintf("r%d-%d", round, len(recs))
				recs = append(recs, Record{Kind: KindTopic, Topic: &TopicRecord{Name: names[id], ID: id}})
			case k < 8:
				id := ids[rng.IntN(len(ids))]
				p := rng.Int32N(parts[id] + 1)
				if p == parts[id] {
					parts[id]++
				}
				recs = append(recs, Record{Kind: KindPartition, Partition: &PartitionRecord{TopicID: id, Partition: p,
					Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}[:1+rng.IntN(3)], Leader: 1, PartitionEpoch: rng.Int32N(100)}})
			case k == 8:
				v := fmt.Sprint(rng.IntN(1000))
				name := names[ids[rng.IntN(len(ids))]]
				recs = append(recs, Record{Kind: KindConfig, Config: &ConfigRecord{ResourceType: ResourceTopic, Name: name, Key: "retention.ms", Value: &v}})
			default:
				if len(ids) > 1 && rng.IntN(3) == 0 {
					i := rng.IntN(len(ids))
					recs = append(recs, Record{Kind: KindRemoveTopic, RemoveTopic: &RemoveTopicRecord{ID: ids[i]}})
					delete(parts, ids[i])
					ids = append(ids[:i], ids[i+1:]...)
				}
			}
		}
		offset++
		before, err := encodeImage(im)
		if err != nil {
			t.Fatal(err)
		}
		one := im
		for _, r := range recs {
			if one, err = one.apply(offset, r); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
		batch, err := applyRecords(im, offset, recs)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if !reflect.DeepEqual(one, batch) {
			t.Fatalf("seed %d, entry %d: applyRecords differs from apply one by one", seed, offset)
		}
		after, _ := encodeImage(im)
		if string(before) != string(after) {
			t.Fatalf("seed %d, entry %d: applyRecords changed the image it started from", seed, offset)
		}
		im = batch
	}
}

// One DeleteTopics of many topics commits one entry; an unknown name, or
// a name asked twice, fails alone.
func TestDeleteTopicsCommitsOneEntry(t *testing.T) {
	c := open(t, vfs.NewMem())
	defer c.Close()
	ctx := context.Background()
	var topics []CreateTopic
	var names []string
	for i := range 50 {
		topics = append(topics, CreateTopic{Name: fmt.Sprintf("d%d", i), NumPartitions: 2, ReplicationFactor: 1})
		names = append(names, fmt.Sprintf("d%d", i))
	}
	if _, err := c.CreateTopics(ctx, topics, false); err != nil {
		t.Fatal(err)
	}
	start := c.Image().Offset
	names = append(names, "nope", "d3")
	res, err := c.DeleteTopics(ctx, names)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if wantErr := i >= 50; (r.Err != nil) != wantErr || wantErr && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			t.Errorf("delete %q: %v", r.Name, r.Err)
		}
	}
	if n := len(walEntries(t, c, start)); n != 1 {
		t.Fatalf("50 topics deleted in %d entries, want 1", n)
	}
	if n := len(c.Image().TopicNames()); n != 0 {
		t.Fatalf("%d topics left", n)
	}
}
