package quorum

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

// readFrame returns exactly the frame's bytes at every size, and a frame
// cut short is an error, not a short frame.
func TestReadFrame(t *testing.T) {
	for _, n := range []int{1, 100, 64 << 10, 64<<10 + 1, 200 << 10, 3<<20 + 7} {
		f := frameOf(n)
		got, err := readFrame(bytes.NewReader(f), 8<<20)
		if err != nil || !bytes.Equal(got, f[4:]) {
			t.Fatalf("frame of %d bytes: got %d bytes, err %v", n, len(got), err)
		}
		if _, err := readFrame(bytes.NewReader(f[:len(f)-1]), 8<<20); !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Fatalf("frame of %d bytes cut by one: err %v, want an end of file", n, err)
		}
	}
	if _, err := readFrame(bytes.NewReader(frameOf(100)), 99); err == nil {
		t.Fatal("a frame over the limit was read")
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
		buf = got
	}
	if _, err := readFrameInto(bytes.NewReader(frameOf(100)), 99, make([]byte, 0, 1<<10)); err == nil {
		t.Fatal("a frame over the limit was read into a buffer that held it")
	}
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
