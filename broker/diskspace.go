package broker

import (
	"context"
	"log/slog"
	"time"

	"github.com/wren-broker/wren/cluster"
	"github.com/wren-broker/wren/config"
	"github.com/wren-broker/wren/engine"
)

// diskSpaceCheckInterval is how often the broker samples its log dir's
// free space (one statfs). Appends resample by themselves as they use up
// the headroom above the floor, and refused produce requests every 100 ms,
// so this only catches other programs filling or freeing the disk.
const diskSpaceCheckInterval = time.Second

// freeSpaceFloor is the engine's floor from log.dir.min.free.bytes and
// log.dir.min.free.percent.
func freeSpaceFloor(cfg *config.Config) engine.FreeSpaceFloor {
	return engine.FreeSpaceFloor{MinFreeBytes: cfg.LogDirMinFreeBytes, MinFreePercent: cfg.LogDirMinFreePercent}
}

// onDiskSpace logs what the log dir's free-space watch reports, and keeps
// high watermarks inside logs that an in-place recovery cut back.
func (b *Broker) onDiskSpace(ev engine.DiskSpaceEvent) {
	s := ev.Space
	figures := []any{"dir", s.Dir, "free.bytes", s.FreeBytes, "total.bytes", s.TotalBytes, "floor.bytes", s.FloorBytes, "resume.bytes", s.ResumeBytes}
	switch ev.Kind {
	case engine.DiskSpaceBelowFloor, engine.DiskSpaceAboveFloor, engine.DiskSpaceDirRecovered:
		b.logDirChanged()
	}
	switch ev.Kind {
	case engine.DiskSpaceBelowFloor:
		b.logger.Warn("log dir is below its free-space floor; produce is refused (KAFKA_STORAGE_ERROR, retriable) until space returns", figures...)
	case engine.DiskSpaceAboveFloor:
		b.logger.Info("log dir is back above its free-space floor; produce resumes", figures...)
	case engine.DiskSpaceNoSpace:
		b.logger.Warn("a write ran out of space and was undone; nothing of it was acknowledged", append(figures, "err", ev.Err)...)
	case engine.DiskSpaceDirRecovered:
		if b.replicas != nil {
			b.replicas.ClampHighWatermarks()
		}
		attrs := append(figures, "logs", ev.Logs, "records.dropped", ev.RecordsDropped, "bytes.dropped", ev.BytesDropped, "took", ev.Took)
		if ev.Err != nil {
			attrs = append(attrs, "checkpoint.err", ev.Err)
		}
		b.logger.Warn("log dir failed for lack of space is recovered in place: each log cut to its durable offset (nothing above it was acknowledged under log.flush.policy ack); writes resume", attrs...)
	case engine.DiskSpaceRecoveryFailed:
		b.logger.Error("log dir failed for lack of space could not be recovered in place", append(figures, "err", ev.Err)...)
	}
}

// logDirState is what this node's heartbeats say of its log dir: offline
// while it takes no client writes (below its free-space floor, or
// failed), so the controller moves its leaderships to in-sync replicas
// that can write and takes it out of every ISR (cluster.LogDirRecords).
// The image keeps it (cluster.BrokerImage.LogDir) for health to name.
//
// It reads the last free-space sample rather than taking one (the watcher
// and the appends sample): a sample may recover a dir failed for lack of
// space in place, which syncs every log, and a heartbeat must not wait
// for that.
func logDirState(logs *engine.Manager) cluster.BrokerLogDir {
	d := cluster.BrokerLogDir{Dir: logs.Dir()}
	if err := logs.Failed(); err != nil {
		d.Offline, d.Reason, d.Detail = true, cluster.LogDirFailed, err.Error()
	} else if s, ok := logs.DiskSpace(); ok && s.BelowFloor {
		d.Offline, d.Reason, d.Detail = true, cluster.LogDirBelowFloor, s.String()
	}
	if len(d.Detail) > 1024 {
		d.Detail = d.Detail[:1024]
	}
	return d
}

// logDirChanged heartbeats at once after the log dir crossed its floor,
// failed or recovered, so the controller moves leaderships within a round
// trip.
func (b *Broker) logDirChanged() {
	if c := b.logDirCtrl.Load(); c != nil {
		c.LogDirChanged()
	}
}

// watchDiskSpace samples the log dir's free space until ctx ends.
func (b *Broker) watchDiskSpace(ctx context.Context) {
	t := time.NewTicker(diskSpaceCheckInterval)
	defer t.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := b.logs.SampleDiskSpace(); err != nil && !warned {
				// Told once: a file system that cannot report free space
				// runs without a floor, as one that fails statfs does.
				warned = true
				b.logger.Warn("cannot measure the log dir's free space; the free-space floor is off", slog.String("dir", b.logs.Dir()), slog.Any("err", err))
			}
		}
	}
}
