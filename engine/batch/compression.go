package batch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressedBytes is the decompressed-size cap used when
// Limits.MaxDecompressedBytes is zero: 16 MiB, far above what a batch under
// Kafka's default max.message.bytes (1 MiB) holds at any sane ratio, and
// small enough that a bomb cannot exhaust a 64 MB edge host.
const DefaultMaxDecompressedBytes = 16 << 20

// xerialMagic opens snappy data in the framing of the xerial snappy-java
// library, which the Java client and kafka-python use: magic, int32 version,
// int32 minimum compatible version, then blocks of [int32 length][raw snappy].
// A raw snappy block can never start with these bytes: 0x82 0x53 would be a
// decoded length, and the next byte, 'N' (0x4e), a copy tag referring back
// into output that does not exist yet.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	// maxDecompressedBytes is the highest cap honoured: 1 GiB.
	maxDecompressedBytes = 1 << 30
	xerialHeaderSize     = 16
	// xerialBlockSize is what snappy-java writes; any size is read.
	xerialBlockSize = 32 << 10
	// deflateMaxRatio bounds how far a gzip size hint is believed.
	deflateMaxRatio = 1032
)

var xerialHeader = append(append([]byte{}, xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

// Compress returns raw compressed with codec ct, in the form Kafka clients
// write it: a gzip stream, a raw snappy block, an LZ4 frame, a zstd frame.
func Compress(ct CompressionType, raw []byte) ([]byte, error) {
	return appendCompressed(nil, ct, raw, false)
}

// Decompress returns the decompressed form of compressed. It fails with
// ErrTooLarge as soon as the output would pass maxBytes (zero means
// DefaultMaxDecompressedBytes), so a decompression bomb costs memory in
// proportion to maxBytes, never to what it expands to: snappy's declared
// sizes are checked before decoding; gzip and lz4 hold at most maxBytes+1
// of output (about 2*maxBytes allocated in all); zstd frames that declare
// their size are refused at the header, streamed ones stop after the first
// block past the cap (about 2.25*maxBytes live, as the decoder grows its
// buffer by append).
// Snappy is accepted both raw and in xerial framing.
func Decompress(ct CompressionType, compressed []byte, maxBytes int) ([]byte, error) {
	return decompress(nil, ct, compressed, maxBytes)
}

func appendCompressed(dst []byte, ct CompressionType, raw []byte, xerial bool) ([]byte, error) {
	switch ct {
	case CompressionNone:
		return append(dst, raw...), nil
	case CompressionGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		buf := bytes.NewBuffer(dst)
		w.Reset(buf)
		if _, err := w.Write(raw); err != nil {
			return nil, fmt.Errorf("batch: gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("batch: gzip: %w", err)
		}
		return buf.Bytes(), nil
	case CompressionSnappy:
		if xerial {
			return appendXerial(dst, raw), nil
		}
		return appendSnappyBlock(dst, raw), nil
	case CompressionLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		buf := bytes.NewBuffer(dst)
		w.Reset(buf)
		if _, err := w.Write(raw); err != nil {
			return nil, fmt.Errorf("batch: lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("batch: lz4: %w", err)
		}
		return buf.Bytes(), nil
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, err
		}
		return enc.EncodeAll(raw, dst), nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(ct))
}

func appendSnappyBlock(dst, raw []byte) []byte {
	n := s2.MaxEncodedLen(len(raw))
	if n < 0 {
		panic(fmt.Sprintf("batch: snappy input of %d bytes is too large", len(raw)))
	}
	at := len(dst)
	if cap(dst)-at < n {
		grown := make([]byte, at, at+n)
		copy(grown, dst)
		dst = grown
	}
	block := s2.EncodeSnappy(dst[at:at+n], raw)
	return dst[:at+len(block)]
}

func appendXerial(dst, raw []byte) []byte {
	dst = append(dst, xerialHeader...)
	for len(raw) > 0 {
		n := min(len(raw), xerialBlockSize)
		at := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		dst = appendSnappyBlock(dst, raw[:n])
		binary.BigEndian.PutUint32(dst[at:], uint32(len(dst)-at-4))
		raw = raw[n:]
	}
	return dst
}

var (
	gzipWriters = sync.Pool{New: func() any {
		w, err := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		if err != nil {
			panic(fmt.Sprintf("batch: gzip writer: %v", err))
		}
		return w
	}}
	// 64 KiB blocks, as the Java client writes, rather than lz4's default
	// 4 MiB: every reader must hold one block in memory.
	lz4Writers = sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		if err := w.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			panic(fmt.Sprintf("batch: lz4 writer: %v", err))
		}
		return w
	}}
	gzipReaders = sync.Pool{New: func() any { return new(gzipReader) }}
	lz4Readers  = sync.Pool{New: func() any {
		r := new(lz4Reader)
		r.r = lz4.NewReader(nil)
		return r
	}}
	// EncodeAll may be called concurrently on one encoder.
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		enc, err := zstd.NewWriter(nil, zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, fmt.Errorf("batch: zstd encoder: %w", err)
		}
		return enc, nil
	})
)

type gzipReader struct {
	src bytes.Reader
	r   gzip.Reader
}

type lz4Reader struct {
	src bytes.Reader
	r   *lz4.Reader
}

// zstdDecoders holds one decoder per cap: the cap is a decoder option
// (WithDecoderMaxMemory, checked after every block), and DecodeAll may run
// concurrently on one decoder. Callers use one or two caps, so the map stays
// tiny; it is bounded anyway. Decoders built with a nil reader start no
// goroutines, so dropping one needs no Close.
//
// The library also refuses frames whose window is above the cap, although
// DecodeAll needs no window buffer. Every standard zstd level (up to 19)
// uses at most an 8 MiB window, under the default cap.
var zstdDecoders struct {
	sync.Mutex
	m map[int]*zstd.Decoder
}

const zstdDecodersMax = 8

func zstdDecoder(limit int) (*zstd.Decoder, error) {
	zstdDecoders.Lock()
	defer zstdDecoders.Unlock()
	if d, ok := zstdDecoders.m[limit]; ok {
		return d, nil
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(uint64(limit)))
	if err != nil {
		return nil, fmt.Errorf("batch: zstd decoder: %w", err)
	}
	if zstdDecoders.m == nil {
		zstdDecoders.m = make(map[int]*zstd.Decoder)
	}
	if len(zstdDecoders.m) >= zstdDecodersMax {
		for k := range zstdDecoders.m {
			delete(zstdDecoders.m, k)
			break
		}
	}
	zstdDecoders.m[limit] = d
	return d, nil
}

// decompressLimit is the cap in force for a Limits.MaxDecompressedBytes.
func decompressLimit(limit int) int {
	if limit <= 0 {
		limit = DefaultMaxDecompressedBytes
	}
	// Keeps limit+1 and doubling inside an int on 32-bit ARM.
	return min(limit, maxDecompressedBytes)
}

// decompressionPlan says how much of the decompression budget one batch
// reserves. Where the batch declares its decompressed size exactly
// (snappy, zstd with a frame content size) that is all it reserves; a
// batch that lies cannot decode past it. Where the size is only a hint
// (gzip's trailer) or unknown (lz4), a first try runs under firstLimit
// holding firstReserve, and only a batch that passes it retries under the
// full cap, holding fullReserve. Streamed decoders grow their output by
// doubling, so they reserve twice what they may produce.
type decompressionPlan struct {
	firstLimit   int // 0: no first try
	firstReserve int64
	fullReserve  int64
}

// unknownSizeFirstTry bounds the first try of a batch whose size is
// unknown: four times its compressed size, at least 64 KiB.
func unknownSizeFirstTry(src []byte) int { return max(64<<10, 4*len(src)) }

func planDecompression(ct CompressionType, src []byte, limit int) decompressionPlan {
	streamed := decompressionPlan{fullReserve: 2 * int64(limit)}
	switch ct {
	case CompressionSnappy:
		n, ok := snappyDeclaredLen(src)
		if !ok || n > limit {
			return decompressionPlan{} // refused before decoding anything
		}
		return decompressionPlan{fullReserve: int64(n)}
	case CompressionZstd:
		var hdr zstd.Header
		if hdr.Decode(src) == nil && hdr.HasFCS && !hdr.Skippable {
			if hdr.FrameContentSize > uint64(limit) {
				return decompressionPlan{}
			}
			return decompressionPlan{fullReserve: int64(hdr.FrameContentSize)}
		}
		// Streamed: read as lz4 is.
		if first := unknownSizeFirstTry(src); first < limit {
			return decompressionPlan{firstLimit: first, firstReserve: 2 * int64(first), fullReserve: streamed.fullReserve}
		}
		return streamed
	case CompressionGzip:
		if len(src) >= 4 {
			hint := int(min(uint64(binary.LittleEndian.Uint32(src[len(src)-4:])), uint64(len(src))*deflateMaxRatio))
			if first := max(hint, 4096); first < limit {
				return decompressionPlan{firstLimit: first, firstReserve: int64(first) + 1, fullReserve: streamed.fullReserve}
			}
		}
		return streamed
	case CompressionLZ4:
		if first := unknownSizeFirstTry(src); first < limit {
			return decompressionPlan{firstLimit: first, firstReserve: 2 * int64(first), fullReserve: streamed.fullReserve}
		}
		return streamed
	}
	return decompressionPlan{}
}

// snappyDeclaredLen is the decoded size a raw or xerial-framed snappy
// section declares; ok is false when it cannot be read (decoding then
// fails without allocating).
func snappyDeclaredLen(src []byte) (int, bool) {
	if !(len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic)) {
		n, err := s2.DecodedLen(src)
		return n, err == nil
	}
	total := 0
	for rem := src[xerialHeaderSize:]; len(rem) > 0; {
		if len(rem) < 4 {
			return 0, false
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return 0, false
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil || n > maxDecompressedBytes-total {
			return 0, false
		}
		total += n
		rem = rem[size:]
	}
	return total, true
}

// decompress decodes src into dst[:0], reusing dst's capacity.
func decompress(dst []byte, ct CompressionType, src []byte, limit int) ([]byte, error) {
	limit = decompressLimit(limit)
	dst = dst[:0]
	if ct == CompressionNone {
		if len(src) > limit {
			return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(src), limit)
		}
		return append(dst, src...), nil
	}
	if !ct.Known() {
		return nil, fmt.Errorf("%w: %d", ErrUnknownCodec, int8(ct))
	}
	// Every codec writes a header even for no data; an empty section with
	// a codec set is not something any client sends.
	if len(src) == 0 {
		return nil, fmt.Errorf("%w: %s: empty compressed data", ErrCorrupt, ct)
	}
	var out []byte
	var err error
	switch ct {
	case CompressionGzip:
		out, err = decompressGzip(dst, src, limit)
	case CompressionSnappy:
		out, err = decompressSnappy(dst, src, limit)
	case CompressionLZ4:
		out, err = decompressLZ4(dst, src, limit)
	case CompressionZstd:
		out, err = decompressZstd(dst, src, limit)
	}
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, fmt.Errorf("%w: %s decompresses past %d bytes", ErrTooLarge, ct, limit)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, ct, err)
	}
	return out, nil
}

func decompressGzip(dst, src []byte, limit int) ([]byte, error) {
	g := gzipReaders.Get().(*gzipReader)
	defer gzipReaders.Put(g)
	g.src.Reset(src)
	if err := g.r.Reset(&g.src); err != nil {
		return nil, err
	}
	// The trailer's ISIZE is the last member's size mod 2^32: a hint only,
	// believed no further than deflate's best ratio and the limit.
	hint := 0
	if len(src) >= 4 {
		hint = int(min(uint64(binary.LittleEndian.Uint32(src[len(src)-4:])), uint64(len(src))*deflateMaxRatio, uint64(limit)))
	}
	return readBounded(dst, &g.r, limit, hint)
}

func decompressLZ4(dst, src []byte, limit int) ([]byte, error) {
	l := lz4Readers.Get().(*lz4Reader)
	defer lz4Readers.Put(l)
	l.src.Reset(src)
	l.r.Reset(&l.src)
	return readBounded(dst, l.r, limit, 0)
}

// decompressZstd decodes with the decoder for this cap a frame that
// declares its content size (librdkafka, franz-go, kafka-python): it gets
// an exact buffer. A streamed frame (the Java client) is read through a
// streaming decoder into readBounded, as gzip is: DecodeAll would grow its
// buffer by append in 1.25x steps, allocating about six times the cap for
// a bomb before it stops.
func decompressZstd(dst, src []byte, limit int) ([]byte, error) {
	var hdr zstd.Header
	if hdr.Decode(src) != nil || !hdr.HasFCS || hdr.Skippable {
		return decompressZstdStreamed(dst, src, limit)
	}
	if hdr.FrameContentSize > uint64(limit) {
		return nil, ErrTooLarge
	}
	d, err := zstdDecoder(limit)
	if err != nil {
		return nil, err
	}
	dst = growTo(dst, int(hdr.FrameContentSize))
	out, err := d.DecodeAll(src, dst)
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return nil, ErrTooLarge
	}
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, ErrTooLarge
	}
	return out, nil
}

// zstdStreamMaxWindow bounds the window a streamed frame may ask for: the
// streaming decoder holds a buffer of that size. Every standard zstd level
// (up to 19) uses at most 8 MiB.
const zstdStreamMaxWindow = 8 << 20

// zstdStreamDecoders are synchronous streaming decoders (concurrency 1
// starts no goroutines).
var zstdStreamDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdStreamMaxWindow))
	if err != nil {
		panic(fmt.Sprintf("batch: zstd stream decoder: %v", err))
	}
	return d
}}

func decompressZstdStreamed(dst, src []byte, limit int) ([]byte, error) {
	d := zstdStreamDecoders.Get().(*zstd.Decoder)
	defer func() {
		d.Reset(nil)
		zstdStreamDecoders.Put(d)
	}()
	if err := d.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	out, err := readBounded(dst, d, limit, min(max(len(src)*4, 16<<10), limit))
	if errors.Is(err, zstd.ErrWindowSizeExceeded) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return nil, ErrTooLarge
	}
	return out, err
}

func decompressSnappy(dst, src []byte, limit int) ([]byte, error) {
	if len(src) >= xerialHeaderSize && bytes.Equal(src[:len(xerialMagic)], xerialMagic) {
		return decompressXerial(dst, src[xerialHeaderSize:], limit)
	}
	n, err := s2.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, ErrTooLarge
	}
	dst = growTo(dst, n)
	return s2.Decode(dst[:n], src)
}

var errXerialFraming = errors.New("malformed xerial framing")

// decompressXerial sums the blocks' declared sizes against the limit
// before decoding any of them. The version fields are not checked: the
// other Kafka readers (librdkafka, franz-go) ignore them too.
func decompressXerial(dst, blocks []byte, limit int) ([]byte, error) {
	total := 0
	for rem := blocks; len(rem) > 0; {
		if len(rem) < 4 {
			return nil, errXerialFraming
		}
		size := binary.BigEndian.Uint32(rem)
		rem = rem[4:]
		if uint64(size) > uint64(len(rem)) {
			return nil, errXerialFraming
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return nil, err
		}
		if n > limit-total {
			return nil, ErrTooLarge
		}
		total += n
		rem = rem[size:]
	}
	dst = growTo(dst, total)[:0]
	for len(blocks) > 0 {
		size := binary.BigEndian.Uint32(blocks)
		block := blocks[4 : 4+size]
		n, _ := s2.DecodedLen(block) // checked above
		at := len(dst)
		if _, err := s2.Decode(dst[at:at+n], block); err != nil {
			return nil, err
		}
		dst = dst[:at+n]
		blocks = blocks[4+size:]
	}
	return dst, nil
}

// growTo returns dst[:0] with capacity at least n.
func growTo(dst []byte, n int) []byte {
	if cap(dst) >= n {
		return dst[:0]
	}
	return make([]byte, 0, n)
}

// readBounded reads r to EOF into dst[:0], failing with ErrTooLarge once
// more than limit bytes arrive. It grows dst itself and never past
// limit+1, so a bomb is caught having allocated about 2*limit bytes in all,
// limit+1 of them live.
func readBounded(dst []byte, r io.Reader, limit, hint int) ([]byte, error) {
	dst = dst[:0]
	if hint < 4096 {
		hint = 4096
	}
	if cap(dst) == 0 {
		// One byte past the hint: an exact hint then reads to EOF without
		// growing (and copying) the buffer.
		dst = make([]byte, 0, min(hint+1, limit+1))
	}
	stalls := 0
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return nil, ErrTooLarge
			}
			// Double, but jump straight to limit+1 once within a factor
			// of two of it, so the last steps are not both near limit.
			next := 2 * cap(dst)
			if next > (limit+1)/2 {
				next = limit + 1
			}
			grown := make([]byte, len(dst), next)
			copy(grown, dst)
			dst = grown
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return nil, ErrTooLarge
		}
		switch {
		case err == io.EOF:
			return dst, nil
		case err != nil:
			return nil, err
		case n == 0:
			if stalls++; stalls > 100 {
				return nil, io.ErrNoProgress
			}
		default:
			stalls = 0
		}
	}
}
