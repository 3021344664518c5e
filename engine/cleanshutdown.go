package engine

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/wren-broker/wren/internal/vfs"
)

// CleanShutdownFile marks a data directory that a completed Close left:
// every log flushed and closed, the checkpoints written. Kafka's name and
// contents (CleanShutdownFileHandler), so either broker reads the other's.
// Part of the on-disk format; never change.
const CleanShutdownFile = ".kafka_cleanshutdown"

// cleanShutdownContents is Kafka's format of the marker; wren knows no
// broker epoch at this layer, and Kafka reads -1 as none.
const cleanShutdownContents = `{"version":0,"brokerEpoch":-1}`

// takeCleanShutdownMarker reports whether the last Close of the directory
// completed, and removes the marker: from now on a crash must read as
// unclean. The removal is made durable by the directory sync that ends
// open (SyncDirAndCheckpoint), before anything is served.
//
// It also returns the marker's stamp (ok=false when the file system keeps
// no fine-grained identity), which a clean-stop summary must name.
func (m *Manager) takeCleanShutdownMarker() (clean bool, marker fileStamp, ok bool, err error) {
	path := m.dir + "/" + CleanShutdownFile
	if marker, ok, err = stampOf(m.fs, path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, fileStamp{}, false, nil
		}
		return false, fileStamp{}, false, fmt.Errorf("engine: %s: %w", path, err)
	}
	if err := m.fs.Remove(path); err != nil {
		return false, fileStamp{}, false, fmt.Errorf("engine: removing %s: %w", path, err)
	}
	return true, marker, ok, nil
}

// writeCleanShutdownMarker runs last in a Close that met no error.
func (m *Manager) writeCleanShutdownMarker() error {
	if m.uncleanPending.Load() {
		return nil
	}
	return vfs.WriteFileAtomic(m.fs, m.dir+"/"+CleanShutdownFile, []byte(cleanShutdownContents))
}

// UncleanShutdownHandled says that the cluster has acted on the unclean
// shutdown this open found (the controller registered this process as
// back from one). Until then a Close leaves no marker, so a start that
// fails, or stops before it was registered, still reads as unclean next
// time: the crash's lost records would otherwise go unnoticed behind a
// clean close of a process that never served.
func (m *Manager) UncleanShutdownHandled() { m.uncleanPending.Store(false) }

// HadCleanShutdown reports whether the directory's previous Close
// completed (its marker was there at open). After a crash, a kill or a
// power loss it is false: records that were written but not synced may be
// gone, so under log.flush.policy interval the replicas here may lack
// records they acknowledged (KIP-966's unclean shutdown).
func (m *Manager) HadCleanShutdown() bool { return m.hadCleanShutdown }
