package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

func compressCase(t testing.TB, c codecCase, raw []byte) []byte {
	t.Helper()
	out, err := appendCompressed(nil, c.ct, raw, c.xerial)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDecompressCap(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	raw := make([]byte, 100_000)
	for i := range raw {
		raw[i] = byte('a' + rng.IntN(4)) // compressible, not trivially
	}
	for _, c := range codecCases {
		t.Run(c.name, func(t *testing.T) {
			comp := compressCase(t, c, raw)
			got, err := Decompress(c.ct, comp, len(raw))
			if err != nil || !bytes.Equal(got, raw) {
				t.Fatalf("at the exact cap: %d bytes, %v", len(got), err)
			}
			if _, err := Decompress(c.ct, comp, len(raw)-1); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("one byte under the cap: %v", err)
			}
		})
	}
}

// xerial framing with several blocks, as snappy-java writes 32 KiB chunks.
func TestXerial(t *testing.T) {
	raw := bytes.Repeat([]byte("0123456789abcdef"), 10_000) // 160 KB: 5 blocks
	comp := appendXerial(nil, raw)
	if !bytes.HasPrefix(comp, xerialHeader) {
		t.Fatalf("header % x", comp[:16])
	}
	got, err := Decompress(CompressionSnappy, comp, 0)
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	// Hand-framed blocks of uneven sizes and version fields other than 1.
	hand := append([]byte{}, xerialMagic...)
	hand = binary.BigEndian.AppendUint32(hand, 7)
	hand = binary.BigEndian.AppendUint32(hand, 3)
	for _, part := range [][]byte{raw[:10], raw[10:70_000], raw[70_000:]} {
		block := s2.EncodeSnappy(nil, part)
		hand = binary.BigEndian.AppendUint32(hand, uint32(len(block)))
		hand = append(hand, block...)
	}
	if got, err := Decompress(CompressionSnappy, hand, 0); err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("hand-framed: %d bytes, %v", len(got), err)
	}
	for name, bad := range map[string][]byte{
		"block length past end": append(append([]byte{}, xerialHeader...), 0, 0, 1, 0, 1, 2),
		"negative block length": append(append([]byte{}, xerialHeader...), 0xff, 0xff, 0xff, 0xff, 1, 2),
		"short length":          append(append([]byte{}, xerialHeader...), 0, 0),
		"bad block":             append(append([]byte{}, xerialHeader...), 0, 0, 0, 2, 0xff, 0xff),
	} {
		if _, err := Decompress(CompressionSnappy, bad, 0); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestDecompressUnknownCodec(t *testing.T) {
	if _, err := Decompress(6, []byte{1, 2, 3}, 0); !errors.Is(err, ErrUnknownCodec) {
		t.Fatal(err)
	}
	if _, err := Compress(5, []byte{1}); !errors.Is(err, ErrUnknownCodec) {
		t.Fatal(err)
	}
}

// allocatedBy reports the bytes the Go heap handed out while f ran.
func allocatedBy(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// A batch that is small on the wire and expands far past the cap must fail
// with ErrTooLarge, quickly, having allocated about the cap, not what it
// expands to.
func TestDecompressionBomb(t *testing.T) {
	const capBytes = 1 << 20
	const bombBytes = 16 << 20
	zeros := make([]byte, bombBytes)
	lim := Limits{MaxDecompressedBytes: capBytes}
	// A zstd window larger than the cap is refused at the frame header; a
	// small window makes the decoder run until the output passes the cap.
	smallWindow, err := zstd.NewWriter(nil, zstd.WithWindowSize(1<<16))
	if err != nil {
		t.Fatal(err)
	}
	cases := append([]codecCase{{name: "zstd-small-window", ct: CompressionZstd}}, compressedCases...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := buildBatch(t, c, []Record{{Value: zeros}}, nil)
			if c.name == "zstd-small-window" {
				h, _ := ParseHeader(b)
				raw, _ := appendRecord(nil, &Record{Value: zeros}, 0, 0)
				// Streamed, as the Java client writes: no content size in
				// the frame header, so only the running output can tell.
				var buf bytes.Buffer
				smallWindow.Reset(&buf)
				if _, err := smallWindow.Write(raw); err != nil {
					t.Fatal(err)
				}
				if err := smallWindow.Close(); err != nil {
					t.Fatal(err)
				}
				var hdr zstd.Header
				if err := hdr.Decode(buf.Bytes()); err != nil || hdr.HasFCS {
					t.Fatalf("streamed frame header %+v, %v", hdr, err)
				}
				b = appendBatch(nil, h, buf.Bytes())
			}
			if len(b) > bombBytes/16 { // snappy's best ratio is about 21
				t.Fatalf("bomb of %d bytes is not small", len(b))
			}
			if _, err := Validate(b, lim); !errors.Is(err, ErrTooLarge) { // warm pools and decoders
				t.Fatalf("Validate = %v, want ErrTooLarge", err)
			}
			var err error
			start := time.Now()
			alloc := allocatedBy(func() { _, err = Validate(b, lim) })
			elapsed := time.Since(start)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Validate = %v, want ErrTooLarge", err)
			}
			t.Logf("%d-byte batch expanding to %d: refused in %v, %d KiB allocated (cap %d KiB)",
				len(b), bombBytes, elapsed, alloc>>10, capBytes>>10)
			// readBounded allocates about 2*cap in all. The zstd decoder
			// grows its buffer by append (1.25x steps): about 6*cap in all
			// for a streamed frame, but at most about 2.25*cap live.
			bound := uint64(3 * capBytes)
			if c.ct == CompressionZstd {
				bound = 8 * capBytes
			}
			if alloc > bound {
				t.Errorf("allocated %d bytes for a %d-byte cap", alloc, capBytes)
			}
			if elapsed > 2*time.Second {
				t.Errorf("took %v to refuse", elapsed)
			}
		})
	}
}

// Declared sizes that lie: refused before anything of that size exists.
func TestDecompressLyingSizes(t *testing.T) {
	const capBytes = 1 << 20
	// A raw snappy block claiming 1 GiB.
	snappyLie := binary.AppendUvarint(nil, 1<<30)
	snappyLie = append(snappyLie, 0)
	// xerial blocks whose sum, not any one, passes the cap.
	xerialLie := append([]byte{}, xerialHeader...)
	block := s2.EncodeSnappy(nil, make([]byte, capBytes/2+1))
	for range 2 {
		xerialLie = binary.BigEndian.AppendUint32(xerialLie, uint32(len(block)))
		xerialLie = append(xerialLie, block...)
	}
	// A zstd frame claiming a content size of 1 GiB: single segment,
	// 8-byte content size, then one empty last raw block.
	zstdLie := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}
	zstdLie = binary.LittleEndian.AppendUint64(zstdLie, 1<<30)
	zstdLie = append(zstdLie, 0x01, 0x00, 0x00)
	var hdr zstd.Header
	if err := hdr.Decode(zstdLie); err != nil || !hdr.HasFCS || hdr.FrameContentSize != 1<<30 {
		t.Fatalf("zstd header: %+v, %v", hdr, err)
	}
	// A gzip trailer claiming 4 GiB - 1.
	gz, err := Compress(CompressionGzip, []byte("tiny"))
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(gz[len(gz)-4:], 0xffffffff)
	for name, c := range map[string]struct {
		ct   CompressionType
		data []byte
		want error
	}{
		"snappy":     {CompressionSnappy, snappyLie, ErrTooLarge},
		"xerial":     {CompressionSnappy, xerialLie, ErrTooLarge},
		"gzip ISIZE": {CompressionGzip, gz, ErrCorrupt}, // size mismatch at the end
		"zstd":       {CompressionZstd, zstdLie, ErrTooLarge},
	} {
		var err error
		alloc := allocatedBy(func() { _, err = Decompress(c.ct, c.data, capBytes) })
		if !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
		if alloc > capBytes {
			t.Errorf("%s: allocated %d bytes", name, alloc)
		}
	}
}

// Bytes after a compressed stream are corruption; a second complete stream
// (gzip members, lz4 and zstd frames) is data, as Java's readers take it.
func TestCompressedTrailers(t *testing.T) {
	msg := []byte("hello hello hello hello")
	for _, c := range compressedCases {
		comp := compressCase(t, c, msg)
		for _, tail := range [][]byte{{0}, {1, 2, 3, 4, 5, 6, 7, 8, 9}} {
			if _, err := Decompress(c.ct, append(append([]byte{}, comp...), tail...), 0); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s + %d garbage bytes: %v", c.name, len(tail), err)
			}
		}
		if c.ct == CompressionSnappy {
			continue // one block, or one xerial stream: nothing to concatenate
		}
		got, err := Decompress(c.ct, append(append([]byte{}, comp...), comp...), 0)
		if err != nil || !bytes.Equal(got, append(append([]byte{}, msg...), msg...)) {
			t.Errorf("%s twice: %q, %v", c.name, got, err)
		}
	}
}
