package cluster

import (
	"errors"
	"fmt"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wal"
)

// errFound stops a scan at the first cluster record.
var errFound = errors.New("cluster: found")

// ReadClusterID returns the cluster id recorded in the metadata log in dir,
// or "" if the log holds none. It opens the log as OpenController would
// (recovering a torn tail), reads up to the first cluster record, and
// closes it. dir holds the metadata log of a quorum (one voter or several)
// or an older version's one-voter log. The broker uses it to tell an
// operator which cluster id a lost meta.properties held; the log must not
// be open elsewhere.
func ReadClusterID(fsys vfs.FS, dir string) (string, error) {
	if _, err := fsys.Stat(dir + "/" + quorumLogDir); err == nil {
		return readQuorumClusterID(fsys, dir)
	}
	l, err := wal.Open(fsys, dir, wal.Options{})
	if err != nil {
		return "", fmt.Errorf("cluster: metadata log: %w", err)
	}
	defer l.Close()
	var id string
	err = l.Scan(l.FirstIndex(), func(index uint64, payload []byte) error {
		recs, err := decodeEntry(payload)
		if err != nil {
			return fmt.Errorf("metadata log entry %d: %w", index, err)
		}
		for _, r := range recs {
			if r.Kind == KindCluster && r.Cluster != nil {
				id = r.Cluster.ClusterID
				return errFound
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", err
	}
	return id, nil
}

// quorumLogDir is the entries' directory inside a quorum's dir
// (cluster/quorum's storage).
const quorumLogDir = "log"

// readQuorumClusterID reads the cluster id from a quorum's stored
// snapshot, else from its first cluster record.
func readQuorumClusterID(fsys vfs.FS, dir string) (string, error) {
	store, stored, err := quorum.OpenStorage(fsys, dir)
	if err != nil {
		return "", err
	}
	defer store.Close()
	im, err := loadSnapshot(stored.Snapshot)
	if err != nil {
		return "", err
	}
	if im.ClusterID != "" {
		return im.ClusterID, nil
	}
	for _, e := range stored.Entries {
		if e.Type != metalog.EntryRecords {
			continue
		}
		recs, err := decodeEntry(e.Data)
		if err != nil {
			return "", fmt.Errorf("metadata log entry %d: %w", e.Index, err)
		}
		for _, r := range recs {
			if r.Kind == KindCluster && r.Cluster != nil {
				return r.Cluster.ClusterID, nil
			}
		}
	}
	return "", nil
}
