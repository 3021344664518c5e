package engine

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// BenchmarkAppend measures appends on the real disk (the test's temporary
// directory) with 1 KiB and 16 KiB batches, 1, 8 and 64 concurrent
// appenders, under flush policy ack (group-committed fdatasync) and
// interval (page cache only). Compare with the disk's raw sequential write
// bandwidth and fdatasync rate (scripts/disk-baseline.sh).
func BenchmarkAppend(b *testing.B) {
	for _, policy := range []FlushPolicy{FlushAck, FlushInterval} {
		for _, size := range []int{1 << 10, 16 << 10} {
			for _, appenders := range []int{1, 8, 64} {
				b.Run(fmt.Sprintf("%s/%dKiB/appenders=%d", policy, size>>10, appenders), func(b *testing.B) {
					benchAppend(b, policy, size, appenders)
				})
			}
		}
	}
}

func benchAppend(b *testing.B, policy FlushPolicy, size, appenders int) {
	opts := DefaultOptions()
	opts.FlushPolicy = policy
	l, _, err := Open(vfs.NewOS(), b.TempDir()+"/t-0", TopicPartition{"t", 0}, opts, OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	// One record whose value fills the batch to about size bytes.
	proto := makeBatch(b, batch.CompressionNone, 0, 1, size-80, 1)
	b.SetBytes(int64(len(proto)))
	b.ResetTimer()
	var wg sync.WaitGroup
	errs := make(chan error, appenders)
	per := b.N / appenders
	for a := 0; a < appenders; a++ {
		n := per
		if a == 0 {
			n += b.N % appenders
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, len(proto))
			for i := 0; i < n; i++ {
				copy(buf, proto)
				if _, err := l.Append(buf, 0); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	if policy == FlushInterval {
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(l.commit.Syncs())/float64(b.N), "fdatasyncs/op")
}

// populatedLog writes about 64 MiB of 16 KiB batches.
func populatedLog(b *testing.B) *Log {
	opts := DefaultOptions()
	opts.FlushPolicy = FlushInterval
	l, _, err := Open(vfs.NewOS(), b.TempDir()+"/t-0", TopicPartition{"t", 0}, opts, OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	proto := makeBatch(b, batch.CompressionNone, 0, 16, 1000, 1)
	buf := make([]byte, len(proto))
	for l.Size() < 64<<20 {
		copy(buf, proto)
		if _, err := l.Append(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkRead: a consumer's fetch of 1 MiB at random offsets: segment
// search, index lookup, forward scan, and the copy out of the page cache.
func BenchmarkRead(b *testing.B) {
	l := populatedLog(b)
	defer l.Close()
	leo := l.LogEndOffset()
	b.Run("locate", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r, err := l.Read(int64(i*7919)%leo, 1<<20, leo, true)
			if err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
	b.Run("locate+copy-1MiB", func(b *testing.B) {
		b.SetBytes(1 << 20)
		for i := 0; i < b.N; i++ {
			r, err := l.Read(int64(i*7919)%(leo/2), 1<<20, leo, true)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.Bytes(); err != nil {
				b.Fatal(err)
			}
			r.Release()
		}
	})
}

// BenchmarkAppendIdempotence compares appends of an idempotent producer's
// batches (sequence checks, producer state) with plain ones, under flush
// policy interval so the fdatasync does not hide the difference.
func BenchmarkAppendIdempotence(b *testing.B) {
	for _, idempotent := range []bool{false, true} {
		b.Run(fmt.Sprintf("idempotent=%v", idempotent), func(b *testing.B) {
			opts := DefaultOptions()
			opts.FlushPolicy = FlushInterval
			l, _, err := Open(vfs.NewOS(), b.TempDir()+"/t-0", TopicPartition{"t", 0}, opts, OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			bld := batch.NewBuilder(batch.CompressionNone)
			bld.Append(batch.Record{Timestamp: 1, Value: make([]byte, 1000)})
			if idempotent {
				bld.ProducerID, bld.ProducerEpoch, bld.BaseSequence = 7, 0, 0
			}
			proto, err := bld.Build()
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 0, len(proto))
			b.SetBytes(int64(len(proto)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Both cases build their batch each time (the sequence is
				// under the CRC), so they differ only in the broker's work.
				if idempotent {
					bld.BaseSequence = int32(i)
				}
				if buf, err = bld.AppendTo(buf[:0]); err != nil {
					b.Fatal(err)
				}
				if _, err := l.Append(buf, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkScrub measures a scrubber pass without its rate cap against a
// plain sequential read of the same segment files (1 MiB reads), on the
// real disk: the ratio is what checking every batch's CRC costs on top of
// reading. With a warm page cache both are CPU-bound; drop the cache
// (echo 3 > /proc/sys/vm/drop_caches, as root) between runs to see the
// disk. The scrubber's share of the disk is its rate cap over the disk's
// read bandwidth (scripts/disk-baseline.sh).
func BenchmarkScrub(b *testing.B) {
	opts := DefaultOptions()
	opts.FlushPolicy = FlushInterval
	opts.SegmentBytes = 16 << 20
	dir := b.TempDir() + "/t-0"
	l, _, err := Open(vfs.NewOS(), dir, TopicPartition{"t", 0}, opts, OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	proto := makeBatch(b, batch.CompressionNone, 0, 16, 1000, 1)
	const total = 64 << 20
	for written := 0; written < total; written += len(proto) {
		buf := append([]byte(nil), proto...)
		if _, err := l.Append(buf, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	size := l.Size()
	b.Run("scrub", func(b *testing.B) {
		b.SetBytes(size)
		for i := 0; i < b.N; i++ {
			st, err := l.Scrub(context.Background(), ScrubConfig{})
			if err != nil || st.DamageFound != 0 || st.BytesRead != size {
				b.Fatalf("scrub: %+v, %v", st, err)
			}
		}
	})
	b.Run("raw-read", func(b *testing.B) {
		b.SetBytes(size)
		buf := make([]byte, 1<<20)
		for i := 0; i < b.N; i++ {
			var n int64
			for _, s := range l.Segments() {
				f, err := vfs.NewOS().Open(segmentFileName(dir, s.BaseOffset, logSuffix))
				if err != nil {
					b.Fatal(err)
				}
				for off := int64(0); off < s.Size; off += int64(len(buf)) {
					got, err := f.ReadAt(buf, off)
					if err != nil && err != io.EOF {
						b.Fatal(err)
					}
					n += int64(got)
				}
				f.Close()
			}
			if n != size {
				b.Fatalf("read %d of %d bytes", n, size)
			}
		}
	})
}
