package wal

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// BenchmarkAppend1KiB appends 1 KiB records, each acknowledged only after
// its fdatasync, from 1, 8 and 64 concurrent appenders on the real file
// system. syncs/op shows how many appends share one fdatasync.
func BenchmarkAppend1KiB(b *testing.B) {
	payload := make([]byte, 1024)
	for i := range payload {
		payload[i] = byte(i)
	}
	for _, appenders := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("appenders=%d", appenders), func(b *testing.B) {
			l := mustOpen(b, vfs.NewOS(), b.TempDir(), Options{})
			defer l.Close()
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			var next atomic.Int64
			var wg sync.WaitGroup
			for range appenders {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						if _, err := l.Append(payload); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(l.Syncs())/float64(b.N), "syncs/op")
		})
	}
}

// BenchmarkAppendNoSync1KiB is the write path alone: encode, CRC, pwrite.
func BenchmarkAppendNoSync1KiB(b *testing.B) {
	l := mustOpen(b, vfs.NewOS(), b.TempDir(), Options{})
	defer l.Close()
	payload := make([]byte, 1024)
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if _, err := l.AppendNoSync(payload); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead1KiB reads records back by index, CRC checked.
func BenchmarkRead1KiB(b *testing.B) {
	l := mustOpen(b, vfs.NewOS(), b.TempDir(), Options{})
	defer l.Close()
	payload := make([]byte, 1024)
	const records = 4096
	for range records {
		if _, err := l.AppendNoSync(payload); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(payload)))
	i := uint64(0)
	for b.Loop() {
		if _, err := l.Read(1 + i%records); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
