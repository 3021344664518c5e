package engine

import (
	"fmt"
	"sync"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// BenchmarkAppendPartitions is produce at 6 partitions through a Manager
// with an open-file budget (the handle cache on the append path): 1 KiB
// batches, two appenders per partition, under flush policy ack and
// interval.
func BenchmarkAppendPartitions(b *testing.B) {
	for _, policy := range []FlushPolicy{FlushAck, FlushInterval} {
		b.Run(fmt.Sprintf("%s/partitions=6", policy), func(b *testing.B) {
			opts := DefaultOptions()
			opts.FlushPolicy = policy
			m, err := OpenManager(vfs.NewOS(), b.TempDir(), benchManagerConfig(opts))
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			const partitions, perPartition = 6, 2
			logs := make([]*Log, partitions)
			for i := range logs {
				if logs[i], err = m.GetOrCreateLog(TopicPartition{Topic: "t", Partition: int32(i)}); err != nil {
					b.Fatal(err)
				}
			}
			proto := makeBatch(b, batch.CompressionNone, 0, 1, 1<<10-80, 1)
			b.SetBytes(int64(len(proto)))
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, partitions*perPartition)
			per := b.N / (partitions * perPartition)
			for a := 0; a < partitions*perPartition; a++ {
				l := logs[a%partitions]
				wg.Add(1)
				go func() {
					defer wg.Done()
					buf := make([]byte, len(proto))
					for i := 0; i < per+1; i++ {
						copy(buf, proto)
						if _, err := l.Append(buf, 0); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkHandlePin is the cost the handle cache adds to every file
// operation on an open handle: one pin and one unpin (atomic), here from
// two goroutines at once on the same handle as appenders and readers do.
func BenchmarkHandlePin(b *testing.B) {
	hc, err := NewHandleCache(64, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer hc.Close()
	fsys := vfs.NewMem()
	h, err := adoptHandle(&fileDir{c: hc, fs: fsys}, 0, logSuffix, fsys.Create)
	if err != nil {
		b.Fatal(err)
	}
	defer h.drop()
	if _, err := h.acquire(); err != nil { // held, as an append's dirty pin
		b.Fatal(err)
	}
	defer h.release()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.acquire(); err != nil {
				b.Fatal(err)
			}
			h.release()
		}
	})
}
