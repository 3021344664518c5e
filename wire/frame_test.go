package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

func frameOf(n int) []byte {
	b := make([]byte, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	for i := range n {
		b[4+i] = byte(i)
	}
	return b
}

func readFrame(r io.Reader, limit int32) ([]byte, error) {
	fr := FrameReader{R: r}
	return fr.ReadFrame(limit, nil, nil)
}

func readFrameInto(r io.Reader, limit int32, buf []byte) ([]byte, error) {
	fr := FrameReader{R: r}
	return fr.ReadFrameInto(limit, buf)
}

// ReadFrame returns exactly the frame's bytes at every size (in memory
// that grows as they arrive, without an admission), and a frame cut short
// is an error, not a short frame.
func TestReadFrame(t *testing.T) {
	for _, n := range []int{1, 100, 64 << 10, 64<<10 + 1, 200 << 10, 3<<20 + 7} {
		f := frameOf(n)
		got, err := readFrame(bytes.NewReader(f), 8<<20)
		if err != nil || !bytes.Equal(got, f[4:]) || cap(got) != n {
			t.Fatalf("frame of %d bytes: got %d bytes (cap %d), err %v", n, len(got), cap(got), err)
		}
		if _, err := readFrame(bytes.NewReader(f[:len(f)-1]), 8<<20); !errors.Is(err, ErrFrameTruncated) {
			t.Fatalf("frame of %d bytes cut by one: err %v, want ErrFrameTruncated", n, err)
		}
	}
	if _, err := readFrame(bytes.NewReader(frameOf(100)), 99); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("a frame over the limit: err %v, want ErrFrameSize", err)
	}
	if _, err := readFrame(bytes.NewReader(nil), 99); err != io.EOF {
		t.Fatalf("no frame at all: err %v, want io.EOF", err)
	}
	// Into a buffer: the frame's bytes whether it fits or not, and a frame
	// over the limit is refused however large the buffer.
	buf := make([]byte, 0, 1<<20)
	for _, n := range []int{1 << 20, 100, 2 << 20, 7} {
		f := frameOf(n)
		got, err := readFrameInto(bytes.NewReader(f), 8<<20, buf)
		if err != nil || !bytes.Equal(got, f[4:]) {
			t.Fatalf("frame of %d bytes into a buffer of %d: got %d bytes, err %v", n, cap(buf), len(got), err)
		}
		if n <= cap(buf) && &got[0] != &buf[:1][0] {
			t.Fatalf("frame of %d bytes did not reuse the buffer of %d", n, cap(buf))
		}
		buf = got
	}
	if _, err := readFrameInto(bytes.NewReader(frameOf(100)), 99, make([]byte, 0, 1<<10)); err == nil {
		t.Fatal("a frame over the limit was read into a buffer that held it")
	}
}

// A peer that announces a large frame and sends little of it holds
// memory for what it sent, not for what it announced.
func TestReadFrameMemoryFollowsBytes(t *testing.T) {
	f := frameOf(16 << 20)[:4+1000]
	fr := FrameReader{R: &capturingReader{r: bytes.NewReader(f)}}
	if _, err := fr.ReadFrame(16<<20, nil, nil); !errors.Is(err, ErrFrameTruncated) {
		t.Fatalf("err %v, want ErrFrameTruncated", err)
	}
	if got := fr.R.(*capturingReader).maxRead; got > growFromBytes {
		t.Fatalf("read into a buffer of %d bytes for a frame that sent 1000, want at most %d", got, growFromBytes)
	}
	// With an admission the budget counted the frame: allocated whole.
	fr = FrameReader{R: &capturingReader{r: bytes.NewReader(f)}}
	fr.ReadFrame(16<<20, nil, func(int32) error { return nil })
	if got := fr.R.(*capturingReader).maxRead; got != 16<<20 {
		t.Fatalf("admitted frame read into %d bytes, want the whole %d", got, 16<<20)
	}
}

// capturingReader records the largest buffer a Read was given.
type capturingReader struct {
	r       io.Reader
	maxRead int
}

func (c *capturingReader) Read(p []byte) (int, error) {
	c.maxRead = max(c.maxRead, len(p))
	return c.r.Read(p)
}

// BenchmarkReadFrame reads a replica fetch response's worth of frame.
func BenchmarkReadFrame(b *testing.B) {
	f := frameOf(8 << 20)
	b.SetBytes(int64(len(f)))
	r := bytes.NewReader(f)
	for b.Loop() {
		r.Reset(f)
		if _, err := readFrame(r, 16<<20); err != nil {
			b.Fatal(err)
		}
	}
}
