package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/security/scram"
)

// Snapshots of the metadata image let a quorum's log be trimmed: every
// node compacts its own log once SnapshotEntries entries were applied
// since its last snapshot (metalog.Node.Compact with the encoded image),
// a restarted node starts from its snapshot and replays only the entries
// after it, and a follower whose log ends before the controller's log
// start gets the controller's snapshot in the fetch answer and restores
// its image from it (restoreSnapshot).

// imageSnapshot is the metadata image as a snapshot stores it: JSON, as
// the log's records are. Part of the on-disk format: add fields, never
// rename or reuse one.
type imageSnapshot struct {
	Version        int                          `json:"version"`
	Offset         uint64                       `json:"offset"`
	ClusterID      string                       `json:"cluster_id"`
	Topics         []*TopicImage                `json:"topics"`
	BrokerConfigs  map[string]map[string]string `json:"broker_configs"`
	NextProducerID int64                        `json:"next_producer_id"`
	Brokers        []*BrokerImage               `json:"brokers"`
	Ledger         []DataLossEntry              `json:"ledger"`
	// ScramCredentials, sorted by user and mechanism; absent in
	// snapshots written before SCRAM, which reads as none.
	ScramCredentials []ScramCredentialRecord `json:"scram_credentials,omitempty"`
	// ClusterSecret; absent in snapshots written before it, and of a
	// cluster that has none yet.
	ClusterSecret []byte `json:"cluster_secret,omitempty"`
	// ClientQuotas, one record per entity and key, sorted; absent in
	// snapshots written before client quotas, which reads as none.
	ClientQuotas []ClientQuotaRecord `json:"client_quotas,omitempty"`
	// ACLs, in acl.Compare's order; absent in snapshots written before
	// ACLs, and of a cluster without any.
	ACLs []ACLRecord `json:"acls,omitempty"`
}

// imageSnapshotVersion is the version encodeImage writes; decodeImage
// refuses others. Part of the on-disk format.
const imageSnapshotVersion = 1

// encodeImage encodes im for a snapshot.
func encodeImage(im *Image) ([]byte, error) {
	s := imageSnapshot{Version: imageSnapshotVersion, Offset: im.Offset, ClusterID: im.ClusterID,
		BrokerConfigs: im.brokerConfigs, NextProducerID: im.NextProducerID, Ledger: im.ledger}
	for _, name := range slices.Sorted(maps.Keys(im.topics)) {
		s.Topics = append(s.Topics, im.topics[name])
	}
	for _, id := range slices.Sorted(maps.Keys(im.brokers)) {
		s.Brokers = append(s.Brokers, im.brokers[id])
	}
	s.ScramCredentials = im.scramRecords()
	s.ClusterSecret = im.secret
	s.ClientQuotas = im.clientQuotaRecords()
	s.ACLs = im.aclRecords()
	return json.Marshal(s)
}

// decodeImage rebuilds an image from a snapshot, checking what the
// records' validation would have kept out.
func decodeImage(data []byte) (*Image, error) {
	var s imageSnapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("cluster: metadata snapshot: %w", err)
	}
	if s.Version != imageSnapshotVersion {
		return nil, fmt.Errorf("cluster: metadata snapshot version %d, this wren reads %d", s.Version, imageSnapshotVersion)
	}
	im := emptyImage()
	im.Offset, im.ClusterID, im.NextProducerID, im.ledger = s.Offset, s.ClusterID, s.NextProducerID, s.Ledger
	if s.BrokerConfigs != nil {
		im.brokerConfigs = s.BrokerConfigs
	}
	for _, t := range s.Topics {
		if t == nil || im.topics[t.Name] != nil || im.byID[t.ID] != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: a topic is missing or listed twice")
		}
		for i, p := range t.Partitions {
			if p.Partition != int32(i) {
				return nil, fmt.Errorf("cluster: metadata snapshot: topic %s has partition %d at position %d", t.Name, p.Partition, i)
			}
		}
		if t.Configs == nil {
			t.Configs = map[string]string{}
		}
		im.topics[t.Name], im.byID[t.ID] = t, t
	}
	for _, b := range s.Brokers {
		if b == nil || im.brokers[b.ID] != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: a broker is missing or listed twice")
		}
		im.brokers[b.ID] = b
	}
	if s.ClusterSecret != nil {
		if err := im.applyClusterSecret(im.Offset, &ClusterSecretRecord{Secret: s.ClusterSecret}); err != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: %w", err)
		}
	}
	for i := range s.ScramCredentials {
		r := &s.ScramCredentials[i]
		if r.Credential == nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: a SCRAM credential of %q without its keys", r.User)
		}
		if m, _ := scram.ParseMechanism(r.Mechanism); im.scram[r.User] != nil && im.scram[r.User][m].StoredKey != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: the %s credential of %q is listed twice", r.Mechanism, r.User)
		}
		if err := im.applyScramCredential(im, im.Offset, r); err != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: %w", err)
		}
	}
	for i := range s.ClientQuotas {
		r := &s.ClientQuotas[i]
		if r.Remove {
			return nil, fmt.Errorf("cluster: metadata snapshot: a client quota removal (%s)", r.Key)
		}
		if e, err := r.entity(); err == nil {
			if _, dup := im.quotas[e][r.Key]; dup {
				return nil, fmt.Errorf("cluster: metadata snapshot: the %s of %s is listed twice", r.Key, e)
			}
		}
		if err := im.applyClientQuota(im, im.Offset, r); err != nil {
			return nil, fmt.Errorf("cluster: metadata snapshot: %w", err)
		}
	}
	if len(s.ACLs) > 0 {
		// One table for every ACL, as one entry's records would make it.
		im.batch = &applyBatch{}
		for i := range s.ACLs {
			r := &s.ACLs[i]
			if r.Delete {
				return nil, fmt.Errorf("cluster: metadata snapshot: a deleted ACL %s", r.Binding())
			}
			if err := im.applyACL(im, im.Offset, r); err != nil {
				return nil, fmt.Errorf("cluster: metadata snapshot: %w", err)
			}
		}
		im.batch = nil
	}
	return im, nil
}

// restoreSnapshot replaces the image with a snapshot's (the quorum driver
// calls it, on its goroutine, when this node installs the controller's
// snapshot) and offers it to the publisher: subscribers see the
// transition from the image they hold to the restored one.
func (c *Controller) restoreSnapshot(data []byte) error {
	im, err := decodeImage(data)
	if err != nil {
		return err
	}
	c.image.Store(im)
	c.pub.offer(im)
	c.q.notifyApplied()
	c.q.log.Info("metadata quorum: image restored from the controller's snapshot", "offset", im.Offset, "topics", len(im.topics))
	return nil
}

// defaultSnapshotEntries is QuorumConfig.SnapshotEntries when not set: a
// few hundred kilobytes of log between snapshots, and a restart replays
// at most that many entries.
const defaultSnapshotEntries = 4096

// defaultSnapshotBytes is QuorumConfig.SnapshotBytes when not set: a
// restart replays at most about this much log (Kafka's
// metadata.log.max.record.bytes.between.snapshots is 20 MB).
const defaultSnapshotBytes = 8 << 20

// snapshotCheckInterval is how often a node looks whether its log grew
// enough for a snapshot.
const snapshotCheckInterval = 200 * time.Millisecond

// compactLoop snapshots this node's log whenever SnapshotEntries entries,
// or SnapshotBytes bytes of entries, were applied since the last snapshot.
func (c *Controller) compactLoop() {
	q := c.q
	defer q.wg.Done()
	every := int64(q.cfg.SnapshotEntries)
	if every <= 0 {
		every = defaultSnapshotEntries
	}
	everyBytes := q.cfg.SnapshotBytes
	if everyBytes <= 0 {
		everyBytes = defaultSnapshotBytes
	}
	// The bytes a restart replays start with what the stored log holds
	// after its snapshot, which this count starts without: the first
	// snapshot of a process may come up to everyBytes late.
	var snapshotAt int64
	t := time.NewTicker(snapshotCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case <-t.C:
		}
		minEntries := every
		applied := q.appliedBytes.Load()
		if applied-snapshotAt >= everyBytes {
			minEntries = 1
		}
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		index, err := q.driver.Compact(ctx, minEntries, func() ([]byte, error) { return encodeImage(c.image.Load()) })
		cancel()
		switch {
		case err != nil:
			q.log.Warn("metadata quorum: snapshot failed", "err", err)
		case index > 0:
			snapshotAt = applied
			q.log.Info("metadata quorum: log compacted into a snapshot", "index", index)
		}
	}
}

// loadSnapshot is the image a node starts from: its stored snapshot's,
// or the empty image.
func loadSnapshot(s metalog.Snapshot) (*Image, error) {
	if s.Index == 0 {
		return emptyImage(), nil
	}
	im, err := decodeImage(s.Data)
	if err != nil {
		return nil, fmt.Errorf("%w (snapshot at %d)", err, s.Index)
	}
	return im, nil
}
