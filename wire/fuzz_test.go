package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzRequestHeader: the header parser never panics, never reads past the
// frame, agrees with itself on what it returns, and reads back what
// AppendRequestHeader writes.
func FuzzRequestHeader(f *testing.F) {
	f.Add(AppendRequestHeader(nil, 18, 3, 7, "client", true), true)
	f.Add(AppendRequestHeader(nil, 3, 1, 7, "", false), false)
	f.Add(AppendRequestHeader(nil, 32001, 0, 7, "wren-quorum-1", false), false)
	f.Add(append(AppendRequestHeader(nil, 18, 3, 1, "c", false), 2, 1, 0, 2, 1, 9), true)
	f.Add([]byte{0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xff}, false)
	f.Fuzz(func(t *testing.T, fr []byte, flexible bool) {
		hdr, clientID, body, err := ParseRequestHeader(fr, flexible)
		if err != nil {
			if !errors.Is(err, ErrMalformedHeader) {
				t.Fatalf("error %v is not ErrMalformedHeader", err)
			}
			return
		}
		if len(body) > len(fr)-10-len(clientID) || !bytes.HasSuffix(fr, body) {
			t.Fatalf("body of %d bytes is not a suffix of the %d-byte frame", len(body), len(fr))
		}
		if hdr.ApiKey != int16(binary.BigEndian.Uint16(fr)) || hdr.CorrelationID != int32(binary.BigEndian.Uint32(fr[4:])) {
			t.Fatalf("header %+v does not match the frame", hdr)
		}
		if !flexible && len(body) != len(fr)-10-len(clientID) {
			t.Fatal("non-flexible header consumed bytes after the client id")
		}
		// Written again (a null client id as empty, the tags dropped), it
		// parses to the same header and body.
		again := append(AppendRequestHeader(nil, hdr.ApiKey, hdr.ApiVersion, hdr.CorrelationID, string(clientID), flexible), body...)
		hdr2, clientID2, body2, err := ParseRequestHeader(again, flexible)
		if err != nil || hdr2 != hdr || !bytes.Equal(clientID2, clientID) || !bytes.Equal(body2, body) {
			t.Fatalf("rewritten header %+v %q (%d-byte body, err %v), want %+v %q (%d)", hdr2, clientID2, len(body2), err, hdr, clientID, len(body))
		}
	})
}

// FuzzReadFrame feeds arbitrary bytes to a FrameReader, as requests (with
// a key check and an admission) and as responses (into a reused buffer):
// it never panics, never returns a frame over the limit or other than the
// announced size, and each frame is the bytes that followed its prefix.
func FuzzReadFrame(f *testing.F) {
	frame := func(body []byte) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	f.Add(frame(AppendRequestHeader(nil, 18, 3, 1, "c", false)), uint16(0))
	f.Add(append(frame([]byte{0, 1, 2}), frame(bytes.Repeat([]byte{7}, 70<<10))...), uint16(100))
	f.Add([]byte{0, 0, 0, 1, 9}, uint16(0))
	f.Add([]byte{22, 3, 1, 0, 9}, uint16(0))
	f.Add([]byte("GET / HTTP/1.1\r\n"), uint16(0))
	const limit = 256 << 10
	f.Fuzz(func(t *testing.T, stream []byte, bufBytes uint16) {
		for _, request := range []bool{true, false} {
			fr := FrameReader{R: bytes.NewReader(stream)}
			buf := make([]byte, 0, int(bufBytes))
			rest := stream
			for {
				var got []byte
				var err error
				if request {
					var admitted int32
					got, err = fr.ReadFrame(limit, func(key int16, size int32) error { return nil }, func(size int32) error { admitted = size; return nil })
					if err == nil && (int(admitted) != len(got) || cap(got) != len(got)) {
						t.Fatalf("admitted %d for a frame of %d bytes (cap %d)", admitted, len(got), cap(got))
					}
				} else {
					got, err = fr.ReadFrameInto(limit, buf)
				}
				if err != nil {
					break
				}
				if len(got) == 0 || len(got) > limit {
					t.Fatalf("frame of %d bytes, limit %d", len(got), limit)
				}
				if len(rest) < 4+len(got) || int(binary.BigEndian.Uint32(rest)) != len(got) || !bytes.Equal(rest[4:4+len(got)], got) {
					t.Fatalf("frame of %d bytes is not what the stream holds", len(got))
				}
				rest = rest[4+len(got):]
				buf = got
			}
		}
	})
}

// FuzzDecoder: reading any body with any sequence of field types never
// panics and never reads past the body; a read that succeeds consumes
// exactly the field's encoding, and a body read to the end without an
// error encodes back to exactly the same bytes.
func FuzzDecoder(f *testing.F) {
	var e Encoder
	e.Uint8(7)
	e.Int16(-2)
	e.Int32(1 << 20)
	e.Int64(-1)
	e.Uint64(1 << 63)
	e.Bool(true)
	e.String("wren")
	e.Bytes([]byte{1, 2, 3})
	e.Bytes(nil)
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 7}, e.B)
	f.Add([]byte{6, 7}, []byte{0xff, 0xff, 0x80, 0, 0, 0})
	f.Add([]byte{5}, []byte{2})
	f.Fuzz(func(t *testing.T, kinds, body []byte) {
		d := NewDecoder(body)
		var again Encoder
		for _, k := range kinds {
			before := d.Remaining()
			switch k % 8 {
			case 0:
				again.Uint8(d.Uint8())
			case 1:
				again.Int16(d.Int16())
			case 2:
				again.Int32(d.Int32())
			case 3:
				again.Int64(d.Int64())
			case 4:
				again.Uint64(d.Uint64())
			case 5:
				again.Bool(d.Bool())
			case 6:
				again.String(d.String())
			case 7:
				p := d.Bytes()
				if d.Err() == nil && p == nil {
					t.Fatal("a byte string read without error is nil")
				}
				again.Bytes(p)
			}
			if d.Remaining() > before {
				t.Fatalf("remaining grew from %d to %d", before, d.Remaining())
			}
			if d.Err() == nil && len(again.B) != len(body)-d.Remaining() {
				t.Fatalf("read %d bytes, encoded %d", len(body)-d.Remaining(), len(again.B))
			}
		}
		if err := d.Finish(); err != nil {
			if d.Err() != err {
				t.Fatalf("Finish returned %v, Err %v", err, d.Err())
			}
			return
		}
		if !bytes.Equal(again.B, body) {
			t.Fatalf("decode-encode changed the bytes:\n in %x\nout %x", body, again.B)
		}
	})
}
