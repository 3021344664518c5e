package engine

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"github.com/wren-broker/wren/engine/batch"
	"github.com/wren-broker/wren/internal/vfs"
)

// BenchmarkClean measures one cleaning pass over a log of 8 MiB of
// 100-byte values in batches of 10 (uncompressed or lz4), 10,000 keys, on
// the in-memory FS: the cleaner's CPU cost (key hashing, record walks,
// re-encoding), not the disk's. Bytes are the log's size before the pass.
func BenchmarkClean(b *testing.B) {
	for _, codec := range []batch.CompressionType{batch.CompressionNone, batch.CompressionLZ4} {
		b.Run(codec.String(), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				opts := compactOptions(nil)
				opts.SegmentBytes = 1 << 20
				opts.IndexIntervalBytes = 4096
				l := openTestLog(b, vfs.NewMem(), opts, OpenOptions{})
				rng := rand.New(rand.NewSource(1))
				value := make([]byte, 100)
				for l.Size() < 8<<20 {
					recs := make([]kv, 10)
					for j := range recs {
						rng.Read(value)
						recs[j] = kv{[]byte(fmt.Sprintf("key-%05d", rng.Intn(10000))), append([]byte(nil), value...)}
					}
					if _, err := l.Append(keyedBatch(b, codec, recs, 1), 0); err != nil {
						b.Fatal(err)
					}
				}
				mustNotErr(b, l.Roll())
				b.SetBytes(l.Size())
				b.StartTimer()
				res, err := l.Clean(context.Background(), CleanConfig{UpperBound: l.LogEndOffset(), DedupeBufferBytes: 1 << 20})
				b.StopTimer()
				mustNotErr(b, err)
				if res.RecordsRetained >= res.RecordsRead {
					b.Fatalf("nothing removed: %+v", res)
				}
				l.Close()
			}
		})
	}
}
