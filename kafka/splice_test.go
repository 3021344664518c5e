package kafka

import (
	"bytes"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/wren-broker/wren/internal/vfs"
	"github.com/wren-broker/wren/wire"
)

// fileSliceForTest writes a real file and returns a slice of it.
func fileSliceForTest(t testing.TB) wire.FileSlice {
	t.Helper()
	fs := vfs.NewOS()
	f, err := fs.Create(filepath.Join(t.TempDir(), "00000000000000000000.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10/16) // 64 KiB
	if _, err := f.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	return wire.FileSlice{File: f, Position: 100, Size: int64(len(data)) - 200}
}

// TestSplicedResponse: byte and file chunks arrive in order after a header
// that is flexible or not with the version, the size prefix covers them
// exactly, the file range goes out with sendfile(2), and Release runs once
// per response.
func TestSplicedResponse(t *testing.T) {
	slice := fileSliceForTest(t)
	want := make([]byte, slice.Size)
	if _, err := slice.File.ReadAt(want, slice.Position); err != nil {
		t.Fatal(err)
	}
	var releases atomic.Int32
	ts := startServer(t, ServerConfig{}, testTable(apiEntry{
		Key: kmsg.Fetch, Min: 4, Max: 12, MaxRequestBytes: smallRequestBytes,
		Handle: func(s *Server, req *Request) (Pending, error) {
			return RespondSpliced(&SplicedResponse{
				Chunks: []Chunk{
					{Bytes: []byte("head|")},
					{File: slice},
					{Bytes: nil},
					{File: wire.FileSlice{File: slice.File, Position: 0, Size: 0}},
					{Bytes: []byte("|mid|")},
					{File: wire.FileSlice{File: slice.File, Position: 0, Size: 10}},
					{Bytes: []byte("|tail")},
				},
				Release: func() { releases.Add(1) },
			}), nil
		},
	}))
	expected := append(append(append([]byte("head|"), want...), "|mid|"...), want[:0]...)
	head := make([]byte, 10)
	slice.File.ReadAt(head, 0)
	expected = append(append(expected, head...), "|tail"...)

	before, _ := wire.SendFileStats()
	c := dial(t, ts.addr)
	for i, version := range []int16{11, 12} { // 12 is the first flexible Fetch
		req := kmsg.NewPtrFetchRequest()
		req.Version = version
		c.send(requestFrame(req, int32(i), "c"))
		corr, body := c.readFrame()
		if corr != int32(i) {
			t.Fatalf("correlation id %d, want %d", corr, i)
		}
		if version >= 12 {
			if body[0] != 0 {
				t.Fatalf("v%d: no empty tag section in the flexible header", version)
			}
			body = body[1:]
		}
		if !bytes.Equal(body, expected) {
			t.Fatalf("v%d: body of %d bytes differs from the %d expected", version, len(body), len(expected))
		}
	}
	c.apiVersions(9) // the stream is still in step
	if after, _ := wire.SendFileStats(); after-before < 2*slice.Size {
		t.Errorf("sendfile moved %d bytes, want at least %d", after-before, 2*slice.Size)
	}
	if releases.Load() != 2 {
		t.Fatalf("Release called %d times for 2 responses", releases.Load())
	}
}
