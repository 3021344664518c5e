package wal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/wren-broker/wren/internal/vfs"
)

// FuzzRecover feeds arbitrary bytes to recovery as the only segment file
// of a log. Open must not panic; if it succeeds it must return exactly the
// records a separate, naive parser finds intact, and take appends after
// them; if it fails it must be because the header is intact but refused.
func FuzzRecover(f *testing.F) {
	valid := encodeFileHeader(1, 0)
	for _, p := range []string{"one", "", "three records in all"} {
		valid = appendRecord(valid, []byte(p))
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-5])
	f.Add(valid[:fileHeaderBytes])
	f.Add(valid[:fileHeaderBytes-1])
	f.Add([]byte{})
	f.Add(append(bytes.Clone(valid), make([]byte, 40)...))
	f.Add(append(encodeFileHeader(1, flagLogStart), 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4))
	f.Add(encodeFileHeader(7, 0))
	bad := bytes.Clone(valid)
	bad[fileHeaderBytes+recordHeaderBytes+1] ^= 1
	f.Add(bad)

	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := vfs.NewMem()
		if err := fsys.MkdirAll("log", 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, fsys, filepath.Join("log", segmentName(1)), data)
		headerOK, refused, want := naiveParse(data)

		l, err := Open(fsys, "log", Options{})
		if err != nil {
			if !refused || !(errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnsupportedVersion)) {
				t.Fatalf("Open: %v (header intact %v, refusable %v)", err, headerOK, refused)
			}
			return
		}
		if refused {
			t.Fatal("Open accepted a header it should refuse")
		}
		if l.FirstIndex() != 1 || l.LastIndex() != uint64(len(want)) {
			t.Fatalf("recovered [%d, %d], want [1, %d]", l.FirstIndex(), l.LastIndex(), len(want))
		}
		for i, p := range want {
			got, err := l.Read(uint64(i + 1))
			if err != nil || !bytes.Equal(got, p) {
				t.Fatalf("Read(%d) = %q, %v; want %q", i+1, got, err, p)
			}
		}
		idx, err := l.Append([]byte("after"))
		if err != nil || idx != uint64(len(want)+1) {
			t.Fatalf("Append after recovery = %d, %v; want %d", idx, err, len(want)+1)
		}
		mustClose(t, l)
		l = mustOpen(t, fsys, "log", Options{})
		defer l.Close()
		if l.LastIndex() != idx {
			t.Fatalf("LastIndex after reopen %d, want %d", l.LastIndex(), idx)
		}
		if got, err := l.Read(idx); err != nil || string(got) != "after" {
			t.Fatalf("Read(%d) after reopen = %q, %v", idx, got, err)
		}
	})
}

// naiveParse reads a segment file the plain way, without the package's
// decoders, as a cross-check: whether the header is intact, whether an
// intact header must be refused (version, flags, first index), and the
// payloads up to the first record that is incomplete or fails its CRC.
func naiveParse(data []byte) (headerOK, refused bool, payloads [][]byte) {
	table := crc32.MakeTable(crc32.Castagnoli)
	if len(data) < 24 || string(data[:8]) != "WRENWAL\x00" ||
		crc32.Checksum(data[:20], table) != binary.BigEndian.Uint32(data[20:24]) {
		return false, false, nil
	}
	version := binary.BigEndian.Uint16(data[8:])
	flags := binary.BigEndian.Uint16(data[10:])
	first := binary.BigEndian.Uint64(data[12:])
	if version != 1 || flags > 1 || first != 1 {
		return true, true, nil
	}
	rest := data[24:]
	for len(rest) >= 8 {
		n := binary.BigEndian.Uint32(rest)
		if n > 256<<20 || uint64(len(rest)-8) < uint64(n) {
			break
		}
		crc := crc32.Update(crc32.Checksum(rest[:4], table), table, rest[8:8+n])
		if crc != binary.BigEndian.Uint32(rest[4:8]) {
			break
		}
		payloads = append(payloads, rest[8:8+n])
		rest = rest[8+n:]
	}
	return true, false, payloads
}
