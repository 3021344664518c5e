package cluster

import (
	"errors"
	"fmt"
	"io/fs"
	"path"

	"github.com/wren-broker/wren/cluster/metalog"
	"github.com/wren-broker/wren/cluster/quorum"
	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wal"
)

// Older versions kept a one-voter controller's metadata log in its own
// format: a wal in the controller's dir, one JSON array of records per
// entry, the image's offset being the wal index. A one-voter controller
// is now a quorum of one over the metadata log of cluster/quorum, and
// converts that wal on its first start: the image it replays becomes the
// quorum's snapshot at the last wal index (epoch 0, before any election),
// so offsets go on where they stopped.
//
// The conversion is built in a directory aside and renamed into place,
// then the old log is removed. A crash leaves either the old layout (the
// aside directory, if any, is built again) or the new one (an old log
// still there is removed).

// convertingSuffix names the directory a conversion is built in.
const convertingSuffix = ".converting"

// convertOneVoterLog converts the one-voter wal in oldDir into quorum
// storage in qDir, unless qDir exists.
func convertOneVoterLog(fsys vfs.FS, oldDir, qDir string) error {
	parent := path.Dir(qDir)
	if _, err := fsys.Stat(qDir); err == nil {
		// Converted (the old log's removal may not have happened), or new.
		return removeOldLog(fsys, oldDir)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cluster: metadata log: %w", err)
	}
	if _, err := fsys.Stat(oldDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("cluster: metadata log: %w", err)
	}
	im, last, err := replayOldLog(fsys, oldDir)
	if err != nil {
		return err
	}
	tmp := qDir + convertingSuffix
	if err := fsys.RemoveAll(tmp); err != nil {
		return fmt.Errorf("cluster: metadata log conversion: %w", err)
	}
	store, _, err := quorum.OpenStorage(fsys, tmp)
	if err != nil {
		return fmt.Errorf("cluster: metadata log conversion: %w", err)
	}
	if last > 0 {
		data, err := encodeImage(im)
		if err == nil {
			err = store.SaveSnapshot(metalog.Snapshot{Index: int64(last), Epoch: 0, Data: data}, false)
		}
		if err != nil {
			store.Close()
			return fmt.Errorf("cluster: metadata log conversion: %w", err)
		}
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("cluster: metadata log conversion: %w", err)
	}
	if err := fsys.Rename(tmp, qDir); err != nil {
		return fmt.Errorf("cluster: metadata log conversion: %w", err)
	}
	if err := fsys.SyncDir(parent); err != nil {
		return fmt.Errorf("cluster: metadata log conversion: %w", err)
	}
	return removeOldLog(fsys, oldDir)
}

// replayOldLog reads an older version's one-voter wal into an image, and
// returns its last index (0 when empty).
func replayOldLog(fsys vfs.FS, dir string) (*Image, uint64, error) {
	l, err := wal.Open(fsys, dir, wal.Options{})
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: metadata log: %w", err)
	}
	defer l.Close()
	im := emptyImage()
	var last uint64
	err = l.Scan(l.FirstIndex(), func(index uint64, payload []byte) error {
		recs, err := decodeEntry(payload)
		if err != nil {
			return fmt.Errorf("metadata log entry %d: %w", index, err)
		}
		im, err = applyRecords(im, index, recs)
		last = index
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("cluster: metadata log %s: %w", dir, err)
	}
	return im, last, nil
}

// removeOldLog removes an older version's one-voter log, converted.
func removeOldLog(fsys vfs.FS, dir string) error {
	if _, err := fsys.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := fsys.RemoveAll(dir); err != nil {
		return fmt.Errorf("cluster: remove the converted metadata log: %w", err)
	}
	if err := fsys.SyncDir(path.Dir(dir)); err != nil {
		return fmt.Errorf("cluster: remove the converted metadata log: %w", err)
	}
	return nil
}
