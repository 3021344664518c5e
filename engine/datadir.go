package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/wren-broker/wren/internal/vfs"
)

// Reasons a data directory cannot be opened. Each error that carries one
// names the path and says what the operator can do about it.
var (
	// ErrDataDirLocked: another process holds the directory's .lock.
	ErrDataDirLocked = errors.New("engine: data directory is in use by another process")
	// ErrDataDirNotWritable: the directory refuses this user's writes
	// (EACCES, EPERM).
	ErrDataDirNotWritable = errors.New("engine: data directory is not writable")
	// ErrDataDirReadOnly: the directory is on a read-only file system
	// (EROFS), such as a root file system mounted read-only after errors.
	ErrDataDirReadOnly = errors.New("engine: data directory is on a read-only file system")
	// ErrMetaPropertiesMissing: meta.properties is gone from a directory
	// that already holds partition logs or a metadata log. A new cluster id
	// would orphan that data, so the directory is refused.
	ErrMetaPropertiesMissing = errors.New("engine: meta.properties is missing beside existing data")
)

// classifyDirError turns an error met while opening the data directory dir
// into one of the errors above when it is one of those cases, and reports
// whether it was.
func classifyDirError(dir string, err error) (error, bool) {
	switch {
	case errors.Is(err, vfs.ErrLocked):
		return fmt.Errorf("%w: %s (its %s is held): stop the other wren, or give this one another log.dirs: %w", ErrDataDirLocked, dir, lockFile, err), true
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("%w: %s: remount the file system read-write, or set log.dirs to a directory on a writable one: %w", ErrDataDirReadOnly, dir, err), true
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %s: the user wren runs as (uid %d) may not create files there; give it the directory (chown -R), or set log.dirs to one it owns: %w", ErrDataDirNotWritable, dir, os.Geteuid(), err), true
	}
	return err, false
}

// existingData lists what in the data directory shows that it already
// holds data: partition directories, the metadata log directory named by
// the config, the offset checkpoints. Unrelated entries, like the
// lost+found of a fresh file system, do not count.
func (m *Manager) existingData() ([]string, error) {
	names, err := m.fs.List(m.dir)
	if err != nil {
		return nil, err
	}
	var found []string
	for _, name := range names {
		_, err := ParseTopicPartitionDir(name)
		isPartition := err == nil && !strings.HasSuffix(name, deleteDirSuffix)
		isMetadataLog := m.cfg.MetadataLogDir != "" && name == m.cfg.MetadataLogDir
		switch {
		case name == RecoveryPointCheckpointFile, name == LogStartOffsetCheckpointFile:
			found = append(found, name)
		case isPartition, isMetadataLog:
			if st, err := m.fs.Stat(m.dir + "/" + name); err == nil && st.IsDir() {
				found = append(found, name)
			}
		}
	}
	return found, nil
}

// missingMetaError explains a lost meta.properties: what data is there,
// the cluster id to restore if it can be learnt, and the lines to write.
func (m *Manager) missingMetaError(path string, found []string) error {
	shown := found
	more := ""
	if len(shown) > 3 {
		shown, more = found[:3], fmt.Sprintf(" and %d more", len(found)-3)
	}
	clusterID, source := "<the cluster's id, as in another node's meta.properties>", ""
	if m.cfg.ClusterID != "" {
		clusterID, source = m.cfg.ClusterID, "the cluster.id of the config"
	}
	if m.cfg.MetadataLogDir != "" && m.cfg.ReadClusterID != nil {
		metaPath := m.dir + "/" + m.cfg.MetadataLogDir
		if st, err := m.fs.Stat(metaPath); err == nil && st.IsDir() {
			id, err := m.cfg.ReadClusterID(metaPath)
			switch {
			case err == nil && id != "":
				clusterID, source = id, "the cluster id recorded in the metadata log "+metaPath
			case err != nil:
				source = fmt.Sprintf("the metadata log %s could not be read: %v", metaPath, err)
			}
		}
	}
	if source != "" {
		source = " (" + source + ")"
	}
	return fmt.Errorf("%w: %s does not exist, but %s already holds %s%s; wren will not start on it with a new cluster id, which would orphan that data. "+
		"Restore meta.properties from a backup, or recreate it with the lines: version=1, cluster.id=%s%s, node.id=%d, directory.id=%s",
		ErrMetaPropertiesMissing, path, m.dir, strings.Join(shown, ", "), more, clusterID, source, m.cfg.NodeID, newDirectoryID())
}

// SetClusterID records the id of the cluster this node joined in
// meta.properties, once: a directory without one takes it (written
// atomically and synced); a directory that already names it is left
// alone; a directory of another cluster is refused with both ids and
// never changed, as a node that moved clusters with its old data would
// mix two clusters' partitions.
func (m *Manager) SetClusterID(id string) error {
	m.metaMu.Lock()
	defer m.metaMu.Unlock()
	path := m.dir + "/" + MetaPropertiesFile
	switch m.meta.ClusterID {
	case id:
		return nil
	case "":
		meta := m.meta
		meta.ClusterID = id
		if err := vfs.WriteFileAtomic(m.fs, path, formatMeta(meta)); err != nil {
			return fmt.Errorf("engine: record cluster.id %s in %s: %w", id, path, err)
		}
		m.meta = meta
		return nil
	}
	err := fmt.Errorf("%w: %s has cluster.id %s, but this node joined cluster %s; wren will not mix two clusters' data and never wipes a data directory: "+
		"give this node an empty log.dirs to join cluster %s, or point it back at the voters of cluster %s",
		ErrClusterIDMismatch, path, m.meta.ClusterID, id, id, m.meta.ClusterID)
	// Nothing more is written to, or acknowledged from, a directory of
	// another cluster.
	m.health.fail(err)
	return err
}
