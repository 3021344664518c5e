package engine

// WriteHighWatermarks writes replication-offset-checkpoint: each hosted
// partition's high watermark, so a restarted replica neither serves
// records that were never committed nor forgets what was.
func (m *Manager) WriteHighWatermarks(hws map[TopicPartition]int64) error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	if err := m.health.check(); err != nil {
		return err
	}
	if err := WriteOffsetCheckpoint(m.fs, m.dir+"/"+ReplicationCheckpointFile, hws); err != nil {
		return m.checkpointFailed(err)
	}
	return nil
}

// ReadHighWatermarks reads replication-offset-checkpoint; a missing file
// is an empty map.
func (m *Manager) ReadHighWatermarks() (map[TopicPartition]int64, error) {
	return ReadOffsetCheckpoint(m.fs, m.dir+"/"+ReplicationCheckpointFile)
}
