package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"github.com/wren-broker/wren/engine/batch"
)

// completeSwaps finishes, on open, a segment swap of the log cleaner that
// a crash interrupted (Kafka's LogLoader rule; see cleaner.go): a
// "<base>.log.swap" is the committed output of a cleaning run, so every
// other segment file with a base offset in the range its batches span is
// an old segment of that run and is deleted, and the .swap takes its final
// name. Its indexes are left to be rebuilt by the scan that follows.
// Index .swap files are deleted. It returns the directory listing as it
// is afterwards. .cleaned files are left to the orphan rule of
// loadSegments, which deletes them: the old segments are all still there.
func (l *Log) completeSwaps(names []string) ([]string, error) {
	var swaps []int64
	changed := false
	for _, name := range names {
		if base, ok := parseBase(name, logSuffix+swapSuffix); ok {
			swaps = append(swaps, base)
			continue
		}
		if strings.HasSuffix(name, indexSuffix+swapSuffix) || strings.HasSuffix(name, timeIndexSuffix+swapSuffix) {
			if err := l.fs.Remove(l.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			changed = true
		}
	}
	sort.Slice(swaps, func(i, j int) bool { return swaps[i] < swaps[j] })
	for _, base := range swaps {
		swapName := segmentFileName(l.dir, base, logSuffix+swapSuffix)
		next, err := l.swapNextOffset(swapName, base)
		if err != nil {
			return nil, err
		}
		changed = true
		if next <= base {
			// Never written by the cleaner, whose output always keeps the
			// run's last batch: leave the old segments alone.
			if err := l.fs.Remove(swapName); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			continue
		}
		for _, name := range names {
			for _, suffix := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
				if b, ok := parseBase(name, suffix); ok && b >= base && b < next {
					if err := l.fs.Remove(l.dir + "/" + name); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return nil, err
					}
				}
			}
		}
		if err := l.fs.Rename(swapName, segmentFileName(l.dir, base, logSuffix)); err != nil {
			return nil, err
		}
	}
	if !changed {
		return names, nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return nil, err
	}
	return l.fs.List(l.dir)
}

// swapNextOffset reads the batch headers of a .log.swap file (fsynced
// before it got that name) and returns the offset after its last whole
// batch, or base when it holds none.
func (l *Log) swapNextOffset(name string, base int64) (int64, error) {
	f, err := l.fs.Open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, err
	}
	next := base
	hdr := make([]byte, batch.RecordBatchOverhead)
	for pos := int64(0); pos+batch.RecordBatchOverhead <= size; {
		if _, err := f.ReadAt(hdr, pos); err != nil {
			return 0, fmt.Errorf("engine: %s at %d: %w", name, pos, err)
		}
		h, err := batch.ParseHeader(hdr)
		if err != nil || pos+int64(h.Size()) > size || h.LastOffset() < next {
			break
		}
		next = h.LastOffset() + 1
		pos += int64(h.Size())
	}
	return next, nil
}
